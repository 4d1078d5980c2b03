import { readFile } from 'node:fs/promises';
import { ConversionFailure } from '../../errors/api-error.ts';
import { decodeUtf8, lineAndColumn } from '../data/utf8.ts';
import { fontCoverage } from '../fonts/coverage.ts';
import { TEXT_OPTIONS } from '../pdf/formats.ts';
import type { EngineJob } from '../types.ts';
import { ENTRY_PATH, type Site } from './site.ts';

const MM_PER_POINT = 25.4 / 72;

/**
 * Plain text the PDF engine's one font cannot set (Chinese, Arabic, emoji, ...), as a page for
 * Chromium: shaped, each line in its own direction (`unicode-bidi: plaintext`), every character in
 * a font that has it (fontconfig's fallback, colour emoji), embedded as subsets. The look is the PDF
 * engine's: monospace at the same size and line height, wrapped, a form feed starts a page.
 */
export async function textSite(job: EngineJob): Promise<Site> {
  const text = decodeUtf8(await readFile(job.inputPath), 'text file').normalize('NFC').replace(/\r\n?/g, '\n');
  await refuseUndrawable(text);
  return new Map([[ENTRY_PATH, Buffer.from(textPage(text, numberOr(job.options.font_size, 'font_size')))]]);
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

function textPage(text: string, fontSizePt: number): string {
  const sections = text.replace(/\n$/, '').split('\f').map((section) => `<pre>${escapeHtml(section)}</pre>`);
  return '<!doctype html><html><head><meta charset="utf-8"><style>'
    + 'html{background:#fff}body{margin:0}'
    + `pre{margin:0;font-family:"DejaVu Sans Mono","Noto Sans Mono CJK SC","Noto Sans Mono",monospace;font-size:${fontSizePt}pt;line-height:1.25;`
    + 'white-space:pre-wrap;overflow-wrap:anywhere;tab-size:8;unicode-bidi:plaintext;color:#000}'
    + 'pre+pre{break-before:page}'
    + `</style></head><body>${sections.join('')}</body></html>`;
}

/** A character no installed font has would print as an empty box: refused, naming it, rather than drawn so. */
async function refuseUndrawable(text: string): Promise<void> {
  const coverage = await fontCoverage();
  if (coverage.fonts === 0) return;
  let offset = 0;
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    if (codePoint > 0x20 && !coverage.covers(codePoint)) {
      const { line, column } = lineAndColumn(text, offset);
      const hex = codePoint.toString(16).toUpperCase().padStart(4, '0');
      throw new ConversionFailure('input_invalid', `Line ${line}, column ${column}: "${char}" (U+${hex}) is in none of the fonts installed on this server, so it cannot be drawn.`);
    }
    offset += char.length;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === '&' ? '&amp;' : char === '<' ? '&lt;' : '&gt;'));
}
