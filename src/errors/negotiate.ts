import { LANGUAGES, type Language } from './messages.ts';

/**
 * Picks the response language from an Accept-Language header (RFC 9110 12.5.4): highest q first,
 * a language range matches by primary subtag (`de-CH` -> `de`), `*` means the default, q=0 excludes.
 */
export function negotiateLanguage(header: string | undefined | null): Language {
  if (!header) return 'en';
  const ranges: { tag: string; q: number; order: number }[] = [];
  header.split(',').forEach((part, order) => {
    const [rawTag, ...params] = part.trim().split(';');
    const tag = rawTag?.trim().toLowerCase();
    if (!tag) return;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.trim().split('=');
      if (key?.trim().toLowerCase() === 'q') {
        const parsed = Number(value);
        q = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 0;
      }
    }
    ranges.push({ tag, q, order });
  });
  ranges.sort((a, b) => b.q - a.q || a.order - b.order);
  const excluded = new Set(ranges.filter((r) => r.q === 0).map((r) => r.tag.split('-')[0]));
  for (const { tag, q } of ranges) {
    if (q === 0) continue;
    if (tag === '*') return LANGUAGES.find((l) => !excluded.has(l)) ?? 'en';
    const primary = tag.split('-')[0] as Language;
    if ((LANGUAGES as readonly string[]).includes(primary) && !excluded.has(primary)) return primary;
  }
  return 'en';
}
