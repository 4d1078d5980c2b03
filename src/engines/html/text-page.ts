import { readTextFile } from '../data/utf8.ts';
import { TEXT_OPTIONS } from '../pdf/formats.ts';
import type { EngineJob } from '../types.ts';
import { ENTRY_PATH, type Site } from './site.ts';

const MM_PER_POINT = 25.4 / 72;

/**
 * Plain text the PDF engine's one font cannot set (Chinese, Arabic, emoji, ...), as a page for
 * Chromium: shaped, each line in its own direction (`unicode-bidi: plaintext`), every character in
 * a font that has it (fontconfig's fallback, colour emoji), embedded as subsets. The look is the PDF
 * engine's: monospace at the same size and line height, wrapped, a form feed starts a page. The
 * PDF engine checked the text before it handed it over (in the engine host: it is UTF-8, within
 * its size limit, every character in some installed font); here it is only escaped, a chunk at a
 * time as it is read, so the daemon's loop never holds it up.
 */
export async function textSite(job: EngineJob): Promise<Site> {
  const parts: Buffer[] = [Buffer.from(pageHead(numberOr(job.options.font_size, 'font_size')))];
  let last = '';
  for await (const text of readTextFile(job.inputPath, 'text file')) {
    if (last) parts.push(Buffer.from(escapeText(last)));
    last = text;
  }
  // A final newline ends the last line; it does not start an empty one.
  parts.push(Buffer.from(`${escapeText(last.replace(/\n$/, ''))}</pre></body></html>`));
  return new Map([[ENTRY_PATH, Buffer.concat(parts)]]);
}

/** The text job's options (points, a paper variant) as the print options of an HTML page. */
export function textPrintOptions(job: EngineJob): EngineJob['options'] {
  const margin = numberOr(job.options.margin, 'margin') * MM_PER_POINT;
  return {
    paper: job.variant === 'letter' ? 'letter' : 'a4',
    margin_top: margin, margin_right: margin, margin_bottom: margin, margin_left: margin,
    print_background: true,
  };
}

function numberOr(value: unknown, name: string): number {
  if (typeof value === 'number') return value;
  const fallback = TEXT_OPTIONS.find((option) => option.name === name)?.default;
  return typeof fallback === 'number' ? fallback : 10;
}

/**
 * Everything before the text. HTML drops a newline right after `<pre>`: one is written there (and
 * after each page break) so that the text's own first line break is kept.
 */
function pageHead(fontSizePt: number): string {
  return '<!doctype html><html><head><meta charset="utf-8"><style>'
    + 'html{background:#fff}body{margin:0}'
    + `pre{margin:0;font-family:"DejaVu Sans Mono","Noto Sans Mono CJK SC","Noto Sans Mono",monospace;font-size:${fontSizePt}pt;line-height:1.25;`
    + 'white-space:pre-wrap;overflow-wrap:anywhere;tab-size:8;unicode-bidi:plaintext;color:#000}'
    + 'pre+pre{break-before:page}'
    + '</style></head><body><pre>\n';
}

/** Text as the inside of `<pre>`: escaped, a form feed closing one page's block and opening the next. */
function escapeText(text: string): string {
  return text.replace(/[&<>\f]/g, (char) => (char === '&' ? '&amp;' : char === '<' ? '&lt;' : char === '>' ? '&gt;' : '</pre><pre>\n'));
}
