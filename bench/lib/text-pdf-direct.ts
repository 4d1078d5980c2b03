/**
 * The pdf-lib side of the large-text bench's txt -> pdf: a plain text laid out as PDF with pdf-lib
 * alone, the least a script does for it: the same font as convd's (DejaVu Sans Mono, subset), A4,
 * 10 pt, 56 pt margins, each line wrapped at spaces to the characters that fit (the font is
 * monospace), one drawText per line. No checks of the characters, no progress, no tabs or form
 * feeds.
 *
 * argv[2] the text, argv[3] the PDF. Prints `{"ms":…}`: the time from reading the text to the
 * written PDF, node's and the modules' start left out.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import { PDFDocument } from 'pdf-lib';
import { PAGE_SIZES, TEXT_FONT_FILE } from '../../src/engines/pdf/formats.ts';

const FONT_SIZE = 10;
const MARGIN = 56;

function wrap(line: string, columns: number): string[] {
  if (line.length <= columns) return [line];
  const out: string[] = [];
  let rest = line;
  while (rest.length > columns) {
    const space = rest.lastIndexOf(' ', columns);
    const cut = space > 0 ? space : columns;
    out.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).replace(/^ +/, '');
  }
  out.push(rest);
  return out;
}

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error('usage: text-pdf-direct.ts INPUT.txt OUTPUT.pdf');
const fontBytes = await readFile(createRequire(import.meta.url).resolve(TEXT_FONT_FILE));
const started = performance.now();
const text = (await readFile(input, 'utf8')).replace(/\r\n?/g, '\n');
const pdf = await PDFDocument.create();
pdf.registerFontkit(fontkit);
const font = await pdf.embedFont(fontBytes, { subset: true });
const [width, height] = PAGE_SIZES.a4;
const lineHeight = FONT_SIZE * 1.25;
const columns = Math.floor((width - 2 * MARGIN) / font.widthOfTextAtSize('M', FONT_SIZE));
const linesPerPage = Math.floor((height - 2 * MARGIN) / lineHeight);
let page = pdf.addPage([width, height]);
let onPage = 0;
for (const line of text.replace(/\n$/, '').split('\n').flatMap((line) => wrap(line, columns))) {
  if (onPage === linesPerPage) {
    page = pdf.addPage([width, height]);
    onPage = 0;
  }
  if (line) page.drawText(line, { x: MARGIN, y: height - MARGIN - FONT_SIZE - onPage * lineHeight, size: FONT_SIZE, font });
  onPage++;
}
await writeFile(output, await pdf.save());
process.stdout.write(`${JSON.stringify({ ms: performance.now() - started })}\n`);
