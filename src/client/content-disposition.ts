/**
 * The file name of a `Content-Disposition` header (RFC 6266): `filename*` (RFC 8187,
 * `UTF-8''percent-encoded`) wins over `filename`, as the RFC asks. Only the name is needed here,
 * so this reads just the two parameters rather than pulling in a full parser.
 */
export function filenameFromContentDisposition(header: string | undefined): string | null {
  if (!header) return null;
  const extended = /(?:^|;)\s*filename\*\s*=\s*([^']*)'[^']*'([^;\s]+)/i.exec(header);
  if (extended) {
    const charset = (extended[1] ?? '').toLowerCase();
    const encoded = extended[2] ?? '';
    try {
      if (charset === 'utf-8' || charset === '') return safeName(decodeURIComponent(encoded));
      // ISO-8859-1 is the only other charset RFC 8187 requires: every escaped byte is one code point.
      return safeName(encoded.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))));
    } catch {
      // Malformed escapes: fall back to the plain parameter.
    }
  }
  const quoted = /(?:^|;)\s*filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header);
  if (quoted) return safeName((quoted[1] ?? '').replace(/\\(.)/g, '$1'));
  const token = /(?:^|;)\s*filename\s*=\s*([^;\s]+)/i.exec(header);
  if (token) return safeName(token[1] ?? '');
  return null;
}

/** A server-chosen name must never pick the directory it is written to. */
function safeName(name: string): string | null {
  const base = name.split(/[\\/]/).pop()?.trim() ?? '';
  if (base === '' || base === '.' || base === '..') return null;
  return base;
}
