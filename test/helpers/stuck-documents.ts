/**
 * Documents that keep an engine busy without progress, and their slow but progressing kin: for
 * the early end of stalled work (progress-watch.ts). Written by hand; no tool under test makes them.
 */
import sharp from 'sharp';
import { docxOf } from './hostile-files.ts';

const DRAWING_NAMESPACES = [
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"',
  'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"',
  'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"',
  'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"',
].join(' ');

/**
 * A flat OpenDocument drawing of one page: a 20 cm square filled with a one-pixel picture tiled
 * every `tileCm`. At 0.001 cm that is 400 million tiles, and LibreOffice 7.4's PDF export stays
 * on the page for as long as it is let (no progress in 88 s, measured); at 0.2 cm (10,000 tiles)
 * it exports in a tenth of a second.
 */
export async function tiledDrawing(tileCm: number): Promise<string> {
  const pixel = await sharp({ create: { width: 1, height: 1, channels: 3, background: { r: 0, g: 128, b: 255 } } }).png().toBuffer();
  return `<?xml version="1.0" encoding="UTF-8"?>
<office:document ${DRAWING_NAMESPACES} office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.graphics">
<office:styles><draw:fill-image draw:name="pixel"><office:binary-data>${pixel.toString('base64')}</office:binary-data></draw:fill-image></office:styles>
<office:automatic-styles><style:style style:name="tiled" style:family="graphic"><style:graphic-properties draw:fill="bitmap" draw:fill-image-name="pixel" style:repeat="repeat" draw:fill-image-width="${tileCm}cm" draw:fill-image-height="${tileCm}cm" draw:stroke="none"/></style:style></office:automatic-styles>
<office:body><office:drawing><draw:page draw:name="page1"><draw:rect draw:style-name="tiled" svg:x="0cm" svg:y="0cm" svg:width="20cm" svg:height="20cm"/></draw:page></office:drawing></office:body>
</office:document>
`;
}

/** A Word document of `paragraphs` paragraphs of plain text (about eight to a page). */
export function longDocx(paragraphs: number, marker: string): Buffer {
  const words = 'the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing matches'.split(' ');
  const body = Array.from({ length: paragraphs }, (_, i) => {
    const text = Array.from({ length: 80 }, (_, j) => words[(i * 7 + j) % words.length]).join(' ');
    return `<w:p><w:r><w:t xml:space="preserve">${i === paragraphs - 1 ? marker : `${i + 1}.`} ${text}</w:t></w:r></w:p>`;
  }).join('');
  return docxOf(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`);
}

/** PostScript pages that each take a while to compute (`spin` empty loop turns) before drawing their number. */
export function slowPagesPostScript(pages: number, spin: number): string {
  return [
    '%!PS',
    '/Helvetica findfont 24 scalefont setfont',
    `1 1 ${pages} { /n exch def 0 1 ${spin} { pop } for 72 700 moveto (Page ) show n 10 string cvs show showpage } for`,
    '',
  ].join('\n');
}
