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

/** Bytes an engine's file name may take before its extension: room is left for what engines add. */
const ENGINE_STEM_BYTES = 120;

/**
 * The stem of the file an engine opens, from the user's file name: what a document may print of
 * its own name (a `FILENAME` field, a sheet named after its file) is then the user's name. Only
 * letters, marks, digits, blanks and `-_.,()+` are kept (others become `_`): never a separator,
 * NUL or control character, nothing an engine reads as a pattern or a prefix (`%d`, `[0]`, `@`,
 * `~`, `file:`). No leading dot, dash or blank; at most 120 bytes of UTF-8; `file` when nothing is
 * left (a name of dots only, say).
 */
export function engineFileStem(originalName: string): string {
  const last = originalName.split(/[\\/]/).pop() ?? '';
  const stem = basename(last, extname(last))
    .normalize('NFC')
    .replace(UNSHOWABLE, '')
    .replace(/[^\p{L}\p{M}\p{N} _\-.,()+]/gu, '_')
    .replace(/\s+/gu, ' ')
    .replace(/\.{2,}/g, '.')
    .replace(/^[\s.\-]+/u, '');
  let kept = '';
  for (const char of stem) {
    if (Buffer.byteLength(kept + char) > ENGINE_STEM_BYTES) break;
    kept += char;
  }
  kept = kept.replace(/[\s.]+$/u, '');
  return kept === '' || /^_+$/.test(kept) ? 'file' : kept;
}
