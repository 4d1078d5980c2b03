import { basename, extname } from 'node:path';

const MAX_NAME = 255;

/**
 * A client's file name as a display name only: control characters, path separators and leading
 * dots removed. It is never used to build a path (blobs are named by conversion id).
 */
export function cleanFileName(raw: string | undefined | null, fallback: string): string {
  if (!raw) return fallback;
  const lastSegment = raw.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const cleaned = lastSegment.replace(/[\u0000-\u001f\u007f]/g, '').replace(/^\.+/, '').trim().slice(0, MAX_NAME);
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
