/**
 * An SVG drawing written by hand (shapes, a gradient, a path and text of a marker), and what a
 * PDF made of it must show: its page the drawing's size, its text, and no picture in it.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { PDFDict, PDFDocument, PDFName, PDFStream } from 'pdf-lib';
import { pdfPageTexts } from './pdf-text.ts';

export const SVG_MARKER = 'Vector drawing 7421';
/** The drawing's size in CSS px: 360 x 240 pt on paper (96 px, 72 pt to the inch). */
export const SVG_SIZE = { width: 480, height: 320 } as const;

export function drawingSvg(extra = ''): string {
  const { width, height } = SVG_SIZE;
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
  <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#a0c8f0"/><stop offset="1" stop-color="#ffffff"/></linearGradient></defs>
  <rect width="${width}" height="${height}" fill="url(#sky)"/>
  <circle cx="120" cy="160" r="70" fill="#f0c020" stroke="#806000" stroke-width="4"/>
  <path d="M260 260 L360 80 L460 260 Z" fill="#2060a0"/>
  <text x="24" y="48" font-family="sans-serif" font-size="28" fill="#102030">${SVG_MARKER}</text>
  ${extra}
</svg>`;
}

/** Chromium sets its paper in 1/300 inch: a page comes out within a point of the size asked. */
export function assertPageSize(size: { width: number; height: number }, expected: { width: number; height: number }, what: string): void {
  assert.ok(Math.abs(size.width - expected.width) <= 1 && Math.abs(size.height - expected.height) <= 1,
    `${what}: ${size.width} x ${size.height} pt, not ${expected.width} x ${expected.height}`);
}

/** Image XObjects a page draws, in its resources and in those of the forms and patterns it uses. */
export function imagesOnPage(pdf: PDFDocument, index: number): number {
  const count = (resources: PDFDict | undefined, seen: Set<PDFStream>): number => {
    let found = 0;
    for (const kind of ['XObject', 'Pattern']) {
      const dict = resources?.lookupMaybe(PDFName.of(kind), PDFDict);
      for (const [, ref] of dict?.entries() ?? []) {
        const object = pdf.context.lookup(ref);
        if (!(object instanceof PDFStream) || seen.has(object)) continue;
        seen.add(object);
        if (object.dict.get(PDFName.of('Subtype')) === PDFName.of('Image')) found++;
        else found += count(object.dict.lookupMaybe(PDFName.of('Resources'), PDFDict), seen);
      }
    }
    return found;
  };
  return count(pdf.getPage(index).node.Resources(), new Set());
}

/** The drawing as vectors: one page of its size (px -> pt: 0.75) plus margins, its text, no picture. */
export async function assertVectorPdf(path: string, margin = 0): Promise<void> {
  const pdf = await PDFDocument.load(await readFile(path));
  assert.equal(pdf.getPageCount(), 1);
  assertPageSize(pdf.getPage(0).getSize(), { width: SVG_SIZE.width * 0.75 + 2 * margin, height: SVG_SIZE.height * 0.75 + 2 * margin }, 'the page');
  const [text] = await pdfPageTexts(path);
  assert.ok(text?.includes(SVG_MARKER), `the PDF's text holds ${SVG_MARKER}: ${JSON.stringify(text)}`);
  assert.equal(imagesOnPage(pdf, 0), 0, 'no image on the page: the drawing is vectors');
}
