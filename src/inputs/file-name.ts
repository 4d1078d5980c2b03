import { basename, extname } from 'node:path';

const MAX_NAME = 255;

/**
 * Characters that are never part of a name someone meant to show, removed like control
 * characters: C0 and C1 controls with DEL (U+0085 and U+2028/U+2029 break lines in logs and
 * terminals), and the bidirectional marks, embeddings, overrides and isolates (U+061C,
 * U+200E/U+200F, U+202A-U+202E, U+2066-U+2069), with which `invoice\u202Efdp.exe` reads as
 * `invoiceexe.pdf` in a listing or a download dialog.
 */
// eslint-disable-next-line no-control-regex
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * A client's file name as a display name only: the characters above, path separators and leading
 * dots removed. It is never used to build a path (blobs are named by conversion id).
 */
export function cleanFileName(raw: string | undefined | null, fallback: string): string {
  if (!raw) return fallback;
  const lastSegment = raw.split(/[\\/]/).pop() ?? '';
  const cleaned = lastSegment.replace(UNSHOWABLE, '').replace(/^\.+/, '').trim().slice(0, MAX_NAME);
  return cleaned || fallback;
}

export function extensionOf(name: string): string | undefined {
  const extension = extname(name).slice(1).toLowerCase();
  return extension || undefined;
}

/** `holiday photo.heic` converted to jpg -> `holiday photo.jpg`. */
export function resultFileName(originalName: string, targetExtension: string): string {
  const stem = basename(originalName, extname(originalName)) || 'converted';
  return `${stem}.${targetExtension}`;
}
