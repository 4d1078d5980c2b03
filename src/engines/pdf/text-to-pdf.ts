import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import { PDFDocument, rgb, type PDFFont, type PDFPage } from 'pdf-lib';
import { ConversionFailure, HandOver } from '../../errors/api-error.ts';
import { decodeText, lineAndColumn } from '../data/utf8.ts';
import { fontCoverage } from '../fonts/coverage.ts';
import { checkOutputSize } from '../output-cap.ts';
import type { EngineJob } from '../types.ts';
import { PAGE_SIZES, TEXT_FONT_FILE, TEXT_FONT_NAME, type PageSize } from './formats.ts';

const TAB_WIDTH = 8;
const LINE_SPACING = 1.25;
/** Larger text would make a PDF of tens of thousands of pages held in memory. */
const MAX_TEXT_BYTES = 20 * 1024 * 1024;

interface FontFace {
  bytes: Uint8Array;
  hasGlyph(codePoint: number): boolean;
}

let fontFace: Promise<FontFace> | undefined;

/** Loads the font once per process; `hasGlyph` answers from its character map. */
export function loadTextFont(): Promise<FontFace> {
  fontFace ??= (async () => {
    const path = createRequire(import.meta.url).resolve(TEXT_FONT_FILE);
    const bytes = await readFile(path);
    const font = fontkit.create(bytes);
    const covered = new Set(font.characterSet);
    return { bytes, hasGlyph: (codePoint: number) => covered.has(codePoint) };
  })();
  return fontFace;
}

/**
 * Scripts written right to left (Hebrew, Arabic, Syriac, Thaana, N'Ko, and their presentation
 * forms) need bidi reordering and shaping that pdf-lib does not do: drawn as-is they come out
 * garbled, so such text goes to Chromium even where the font has glyphs (as does text the font lacks).
 */
const RIGHT_TO_LEFT = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF]/u;
/** Control characters other than tab, newline and form feed mean this is not a text file. */
const CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F\u007F]/u;

/** Text -> PDF: wrapped to the page width, paginated, form feeds start a new page. */
export async function textToPdf(job: EngineJob): Promise<void> {
  job.onProgress(0);
  const bytes = await readFile(job.inputPath);
  if (bytes.length > MAX_TEXT_BYTES) {
    throw new ConversionFailure('conversion_failed', `The text file is larger than ${MAX_TEXT_BYTES / 1024 / 1024} MB, the most that is laid out as PDF.`);
  }
  const text = decodeText(bytes, 'text file').normalize('NFC').replace(/\r\n?/g, '\n');
  const face = await loadTextFont();
  await checkCharacters(text, face);

  const [pageWidth, pageHeight] = PAGE_SIZES[(job.variant ?? 'a4') as PageSize] ?? PAGE_SIZES.a4;
  const margin = typeof job.options.margin === 'number' ? job.options.margin : 56;
  const fontSize = typeof job.options.font_size === 'number' ? job.options.font_size : 10;
  const lineHeight = fontSize * LINE_SPACING;
  const usableWidth = pageWidth - 2 * margin;
  const linesPerPage = Math.floor((pageHeight - 2 * margin) / lineHeight);
  if (usableWidth < fontSize * 2 || linesPerPage < 1) {
    throw new ConversionFailure('input_invalid', 'The margin leaves no room for text on the page.');
  }

  const pdf = await PDFDocument.create();
  pdf.registerFontkit(fontkit);
  // Subset: only the glyphs used go into the file.
  const font = await pdf.embedFont(face.bytes, { subset: true });

  const width = measurer(font, fontSize);
  const sourceLines = text.split('\n');
  // A final newline ends the last line; it does not start an empty one.
  if (sourceLines.length > 1 && sourceLines.at(-1) === '') sourceLines.pop();
  let page: PDFPage | undefined;
  let lineOnPage = 0;
  const newPage = (): PDFPage => {
    lineOnPage = 0;
    return pdf.addPage([pageWidth, pageHeight]);
  };
  for (let index = 0; index < sourceLines.length; index++) {
    const segments = sourceLines[index]!.split('\f');
    for (let s = 0; s < segments.length; s++) {
      if (s > 0) page = newPage();
      const wrapped = wrap(expandTabs(segments[s]!), width, usableWidth);
      for (const line of wrapped) {
        if (!page || lineOnPage >= linesPerPage) page = newPage();
        if (line.length > 0) {
          page.drawText(line, {
            x: margin,
            y: pageHeight - margin - fontSize - lineOnPage * lineHeight,
            size: fontSize,
            font,
            color: rgb(0, 0, 0),
          });
        }
        lineOnPage++;
      }
    }
    if (index % 500 === 499) {
      job.onProgress(Math.floor((index / sourceLines.length) * 90));
      // Let an abort land between chunks of a long file.
      await new Promise<void>((resolve) => setImmediate(resolve));
      job.signal.throwIfAborted();
    }
  }
  if (!page) newPage(); // an empty file is one blank page
  job.signal.throwIfAborted();
  const document = await pdf.save();
  checkOutputSize(document.length, job.maxOutputBytes);
  await writeFile(job.outputPath, document);
  job.onProgress(100);
}

/**
 * Refuses what is not text; hands text this font cannot set (another script, right to left) to
 * Chromium, once every character of it is in some installed font (fontconfig's coverage): one
 * that is in none would print as an empty box, and is refused by name instead. Checked here, in
 * the engine host, so the daemon's loop never walks the text.
 */
async function checkCharacters(text: string, face: FontFace): Promise<void> {
  const control = CONTROL.exec(text);
  if (control) {
    const { line } = lineAndColumn(text, control.index);
    throw new ConversionFailure('input_invalid', `Line ${line} contains the control character U+${hex(control[0].codePointAt(0)!)}: this does not look like a text file.`);
  }
  const reason = unsettable(text, face);
  if (reason === null) return;
  const coverage = await fontCoverage();
  if (coverage.fonts > 0) {
    let offset = 0;
    for (const char of text) {
      const codePoint = char.codePointAt(0)!;
      if (codePoint > 0x20 && !coverage.covers(codePoint)) {
        const { line, column } = lineAndColumn(text, offset);
        throw new ConversionFailure('input_invalid', `Line ${line}, column ${column}: "${char}" (U+${hex(codePoint)}) is in none of the fonts installed on this server, so it cannot be drawn.`);
      }
      offset += char.length;
    }
  }
  throw new HandOver(reason);
}

/** Why this font cannot set the text (the first character it lacks, or right-to-left script), or null. */
function unsettable(text: string, face: FontFace): string | null {
  const rtl = RIGHT_TO_LEFT.exec(text);
  if (rtl) {
    const { line, column } = lineAndColumn(text, rtl.index);
    return `Line ${line}, column ${column}: "${rtl[0]}" (U+${hex(rtl[0].codePointAt(0)!)}) is right-to-left script, which text to PDF sets only where Chromium is installed.`;
  }
  let offset = 0;
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    if (codePoint !== 10 && codePoint !== 9 && codePoint !== 12 && !face.hasGlyph(codePoint)) {
      const { line, column } = lineAndColumn(text, offset);
      return `Line ${line}, column ${column}: "${char}" (U+${hex(codePoint)}) is not in ${TEXT_FONT_NAME}, which covers Latin, Greek, Cyrillic and common symbols; other scripts are set only where Chromium is installed.`;
    }
    offset += char.length;
  }
  return null;
}

function hex(codePoint: number): string {
  return codePoint.toString(16).toUpperCase().padStart(4, '0');
}

function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  for (const char of line) {
    if (char === '\t') out += ' '.repeat(TAB_WIDTH - ([...out].length % TAB_WIDTH));
    else out += char;
  }
  return out;
}

/**
 * Characters whose width in a line is their own width, whatever is around them: Latin, its
 * accented letters and the spacing modifiers, up to U+02FF (the combining marks start at U+0300
 * and take no width of their own once the font's layout places them).
 */
const SPACING_ONLY = /^[\u0020-\u007E\u00A0-\u02FF]*$/;

/**
 * Width of text at `size`: for text of SPACING_ONLY characters the sum of each character's own
 * width (measured once), since this monospace font has no kerning or ligatures; for any other
 * text the font's full layout. pdf-lib lays a string out glyph by glyph with fontkit's shaper on
 * each call, and measuring every line that way cost as much as drawing it: a third of a 1 MB
 * text's conversion.
 */
function measurer(font: PDFFont, size: number): (text: string) => number {
  const widths = new Map<string, number>();
  return (text) => {
    if (!SPACING_ONLY.test(text)) return font.widthOfTextAtSize(text, size);
    let total = 0;
    for (let i = 0; i < text.length; i++) {
      const char = text[i]!;
      let width = widths.get(char);
      if (width === undefined) widths.set(char, (width = font.widthOfTextAtSize(char, size)));
      total += width;
    }
    return total;
  };
}

/** Greedy wrap at spaces; a word longer than the line is broken where it overflows. */
function wrap(line: string, width: (text: string) => number, maxWidth: number): string[] {
  if (line.length === 0) return [''];
  if (width(line) <= maxWidth) return [line];
  const out: string[] = [];
  let rest = line;
  while (rest.length > 0) {
    if (width(rest) <= maxWidth) {
      out.push(rest);
      break;
    }
    const chars = [...rest];
    // Longest prefix that fits (monospace, so a binary search over character counts is exact).
    let low = 1;
    let high = chars.length;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (width(chars.slice(0, mid).join('')) <= maxWidth) low = mid;
      else high = mid - 1;
    }
    let cut = low;
    const space = chars.slice(0, cut + 1).lastIndexOf(' ');
    if (space > 0) cut = space;
    out.push(chars.slice(0, cut).join('').trimEnd());
    rest = chars.slice(cut).join('').replace(/^ +/, '');
  }
  return out;
}
