/** The most characters a name taken from a URL may keep. */
export const MAX_NAME_LENGTH = 200;
const FALLBACK = 'download';

// Control characters (C0, DEL, C1) and bidirectional overrides/isolates, which can make a displayed
// name read differently from what it is ("invoice\u202Efdp.exe").
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
// Path separators and the characters Windows refuses in file names: the CLI may save under this name.
const UNSAFE = /[/\\:*?"<>|]/g;

/**
 * The display name of a URL input (the last segment of the URL path, decoded, else
 * `download`). The query and fragment never count; a trailing slash falls back to the segment before
 * it. The result never contains a path separator, a control character or `..`, never starts with a
 * dot, and has at most 200 characters (the extension is kept when the stem is shortened).
 */
export function nameFromUrl(url: string): string {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return FALLBACK;
  }
  // Split the raw path first, so an encoded slash (%2F) stays inside its segment (and is replaced below).
  const segment = pathname.split('/').filter((part) => part !== '').pop();
  if (segment === undefined) return FALLBACK;
  return sanitizeName(safeDecode(segment));
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes: show them as they are
  }
}

export function sanitizeName(raw: string): string {
  const cleaned = raw
    .normalize('NFC')
    .replace(INVISIBLE, '')
    .replace(UNSAFE, '_')
    .replace(/\.{2,}/g, '.') // no `..` anywhere, not only as a whole name
    .replace(/^[\s.]+/u, '') // no hidden files, no leading blanks
    .replace(/[\s.]+$/u, ''); // Windows drops trailing dots and spaces
  if (cleaned === '' || /^_+$/.test(cleaned)) return FALLBACK;
  return truncate(cleaned);
}

/** Shortens by code points (never splitting a surrogate pair) and keeps a short extension. */
function truncate(name: string): string {
  const chars = Array.from(name);
  if (chars.length <= MAX_NAME_LENGTH) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? Array.from(name.slice(dot)) : [];
  if (extension.length > 1 && extension.length <= 16) {
    const stem = Array.from(name.slice(0, dot)).slice(0, MAX_NAME_LENGTH - extension.length);
    return stem.join('').replace(/[\s.]+$/u, '') + extension.join('');
  }
  return chars.slice(0, MAX_NAME_LENGTH).join('').replace(/[\s.]+$/u, '');
}
