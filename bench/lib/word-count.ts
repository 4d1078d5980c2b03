/**
 * Words of a WordprocessingML part counted roughly as Word counts them for docProps/app.xml's
 * `<Words>`, to show a text that changed after Word counted it. Word's own figure is often off by
 * a fifth even in files it saved last, so the two are reported side by side, never compared by a
 * rule. Runs are joined within a word; paragraph and cell ends, tabs and breaks end one; each CJK
 * character is a word of its own. Deleted text and field codes are not text, and a drawing's
 * fallback copy (`mc:Fallback`, the same text box again for older readers) is left out.
 */

const FALLBACK = /<mc:Fallback\b[\s\S]*?<\/mc:Fallback>/g;
/** A run's text, or an element that ends a word (paragraph or cell end, tab, break). */
const PIECE = /<w:t(?:\s[^>]*)?>([^<]*)<\/w:t>|<w:t\s*\/>|<\/w:p>|<\/w:tc>|<w:(?:tab|br|cr|noBreakHyphen)\b[^>]*\/>/g;
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/g;
const ENTITIES: Record<string, string> = { '&lt;': '<', '&gt;': '>', '&amp;': '&', '&quot;': '"', '&apos;': "'" };

export function documentText(xml: string): string {
  let text = '';
  for (const piece of xml.replace(FALLBACK, '').matchAll(PIECE)) text += piece[1] ?? ' ';
  return text.replace(/&(?:lt|gt|amp|quot|apos);/g, (entity) => ENTITIES[entity]!);
}

export function countWords(text: string): number {
  const cjk = text.match(CJK)?.length ?? 0;
  const words = text.replace(CJK, ' ').split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word)).length;
  return cjk + words;
}
