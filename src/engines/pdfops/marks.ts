import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import {
  degrees, drawText, PDFArray, PDFDocument, PDFName, PDFRef, pushGraphicsState, popGraphicsState, rgb,
  type PDFFont, type PDFOperator, type PDFPage,
} from 'pdf-lib';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { TextMark } from './requests.ts';
import { placeText, type PageFrame } from './placement.ts';

/** The marks' font, shipped with the project: Latin, Greek and Cyrillic in one face. */
export const MARK_FONT_NAME = 'DejaVu Sans';
const MARK_FONT_FILE = 'dejavu-fonts-ttf/ttf/DejaVuSans.ttf';
/** Distance of a mark at an edge from that edge, in points. */
const EDGE_MARGIN = 24;

interface MarkFont {
  bytes: Uint8Array;
  covers(codePoint: number): boolean;
}

let markFont: Promise<MarkFont> | undefined;

function loadMarkFont(): Promise<MarkFont> {
  markFont ??= (async () => {
    const bytes = await readFile(createRequire(import.meta.url).resolve(MARK_FONT_FILE));
    const covered = new Set(fontkit.create(bytes).characterSet);
    return { bytes, covers: (codePoint: number) => covered.has(codePoint) };
  })();
  return markFont;
}

/** Every character of a mark must be in the font: one it lacks would be drawn as an empty box. */
function checkCoverage(marks: TextMark[], font: MarkFont): void {
  for (const mark of marks) {
    for (const character of mark.text(0, 1)) {
      const codePoint = character.codePointAt(0)!;
      if (/\s/u.test(character) || font.covers(codePoint)) continue;
      const hex = codePoint.toString(16).toUpperCase().padStart(4, '0');
      throw new ConversionFailure('input_invalid', `${mark.option}: the font ${MARK_FONT_NAME} has no glyph for "${character}" (U+${hex}).`);
    }
  }
}

function frameOf(page: PDFPage): PageFrame {
  const box = page.getCropBox();
  return { x: box.x, y: box.y, width: box.width, height: box.height, rotation: page.getRotation().angle };
}

/** The drawing operators of one mark on one page, resources added to the page. */
function markOperators(doc: PDFDocument, page: PDFPage, font: PDFFont, fontKey: PDFName, mark: TextMark, index: number, total: number): PDFOperator[] {
  const words = mark.text(index, total).replace(/\s+/gu, ' ');
  const ascent = font.heightAtSize(mark.size, { descender: false });
  const extent = { width: font.widthOfTextAtSize(words, mark.size), ascent, descent: font.heightAtSize(mark.size) - ascent };
  const placed = placeText(frameOf(page), extent, mark.angle, mark.position, EDGE_MARGIN);
  const graphicsState = mark.opacity < 1 ? page.node.newExtGState('GS', doc.context.obj({ Type: 'ExtGState', ca: mark.opacity, CA: mark.opacity })) : undefined;
  return [
    pushGraphicsState(),
    ...drawText(font.encodeText(words), {
      color: rgb(...mark.colour), font: fontKey, size: mark.size, rotate: degrees(placed.angle), xSkew: degrees(0), ySkew: degrees(0),
      x: placed.x, y: placed.y, ...(graphicsState ? { graphicsState } : {}),
    }),
    popGraphicsState(),
  ];
}

/**
 * The page's content streams as references: /Contents is one stream, a list of them, or a
 * reference to such a list, or absent; a direct object is registered so that it can stand in a list.
 */
function contentRefs(doc: PDFDocument, page: PDFPage): PDFRef[] {
  const raw = page.node.get(PDFName.of('Contents'));
  if (raw === undefined) return [];
  const resolved = raw instanceof PDFRef ? doc.context.lookup(raw) : raw;
  const items = resolved instanceof PDFArray ? resolved.asArray() : [raw];
  return items.map((item) => (item instanceof PDFRef ? item : doc.context.register(item)));
}

/**
 * Draws the marks on every page: those `under` before the page's own content (a filled page
 * hides them, as paper hides a watermark), the others after it, the page's content wrapped in
 * q/Q so that a state it leaves changed does not move them.
 */
export async function drawMarks(doc: PDFDocument, marks: TextMark[], signal: AbortSignal, onPage: (done: number, total: number) => void): Promise<void> {
  if (marks.length === 0) return;
  const face = await loadMarkFont();
  checkCoverage(marks, face);
  doc.registerFontkit(fontkit);
  const font = await doc.embedFont(face.bytes, { subset: true });
  const pages = doc.getPages();
  for (const [index, page] of pages.entries()) {
    signal.throwIfAborted();
    const fontKey = page.node.newFontDictionary(MARK_FONT_NAME.replace(/\s/g, ''), font.ref);
    const stream = (operators: PDFOperator[]): PDFRef => doc.context.register(doc.context.contentStream(operators));
    const under = marks.filter((m) => m.under).flatMap((m) => markOperators(doc, page, font, fontKey, m, index, pages.length));
    const over = marks.filter((m) => !m.under).flatMap((m) => markOperators(doc, page, font, fontKey, m, index, pages.length));
    const refs = contentRefs(doc, page);
    const wrapped = over.length > 0 && refs.length > 0 ? [stream([pushGraphicsState()]), ...refs, stream([popGraphicsState()])] : refs;
    const list = [...(under.length > 0 ? [stream(under)] : []), ...wrapped, ...(over.length > 0 ? [stream(over)] : [])];
    page.node.set(PDFName.of('Contents'), doc.context.obj(list));
    onPage(index + 1, pages.length);
    // Long documents: let an abort be seen between pages.
    if (index % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
  }
}
