import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import {
  beginMarkedContent, degrees, drawImage, drawText, endMarkedContent, PDFArray, PDFDocument, PDFName, PDFRef, pushGraphicsState, popGraphicsState, rgb,
  type PDFFont, type PDFImage, type PDFOperator, type PDFPage,
} from 'pdf-lib';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ImageMark, Mark, TextMark } from './requests.ts';
import { normalRotation, placeText, type PageFrame } from './placement.ts';

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
function checkCoverage(marks: readonly TextMark[], font: MarkFont): void {
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

/** A graphics state with the mark's opacity, where it is not opaque. */
function opacityState(doc: PDFDocument, page: PDFPage, opacity: number): PDFName | undefined {
  return opacity < 1 ? page.node.newExtGState('GS', doc.context.obj({ Type: 'ExtGState', ca: opacity, CA: opacity })) : undefined;
}

/** The drawing operators of one text mark on one page, resources added to the page. */
function textOperators(doc: PDFDocument, page: PDFPage, font: PDFFont, fontKey: PDFName, mark: TextMark, index: number, total: number): PDFOperator[] {
  const words = mark.text(index, total).replace(/\s+/gu, ' ');
  const ascent = font.heightAtSize(mark.size, { descender: false });
  const extent = { width: font.widthOfTextAtSize(words, mark.size), ascent, descent: font.heightAtSize(mark.size) - ascent };
  const placed = placeText(frameOf(page), extent, mark.angle, mark.position, EDGE_MARGIN);
  const graphicsState = opacityState(doc, page, mark.opacity);
  return [
    beginMarkedContent('Artifact'),
    pushGraphicsState(),
    ...drawText(font.encodeText(words), {
      color: rgb(...mark.colour), font: fontKey, size: mark.size, rotate: degrees(placed.angle), xSkew: degrees(0), ySkew: degrees(0),
      x: placed.x, y: placed.y, ...(graphicsState ? { graphicsState } : {}),
    }),
    popGraphicsState(),
    endMarkedContent(),
  ];
}

/** The drawing operators of one image mark on one page: as wide as its share of the page as shown. */
function imageOperators(doc: PDFDocument, page: PDFPage, image: PDFImage, mark: ImageMark): PDFOperator[] {
  const frame = frameOf(page);
  const sideways = normalRotation(frame.rotation) % 180 !== 0;
  const width = ((sideways ? frame.height : frame.width) * mark.widthPercent) / 100;
  const height = (width * image.height) / image.width;
  const placed = placeText(frame, { width, ascent: height, descent: 0 }, mark.angle, mark.position, EDGE_MARGIN);
  const name = page.node.newXObject('Mark', image.ref);
  const graphicsState = opacityState(doc, page, mark.opacity);
  return [
    beginMarkedContent('Artifact'),
    pushGraphicsState(),
    ...drawImage(name, {
      x: placed.x, y: placed.y, width, height, rotate: degrees(placed.angle), xSkew: degrees(0), ySkew: degrees(0), ...(graphicsState ? { graphicsState } : {}),
    }),
    popGraphicsState(),
    endMarkedContent(),
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
 * q/Q so that a state it leaves changed does not move them. An image mark is embedded once and
 * drawn on every page. Each mark is an artifact (marked content), not part of a tagged PDF's
 * structure: a screen reader skips it, and PDF/UA asks that of everything untagged.
 */
export async function drawMarks(doc: PDFDocument, marks: Mark[], settings: MarkImageSettings, signal: AbortSignal, onPage: (done: number, total: number) => void): Promise<void> {
  if (marks.length === 0) return;
  const textMarks = marks.filter((mark): mark is TextMark => mark.kind === 'text');
  let font: PDFFont | undefined;
  if (textMarks.length > 0) {
    const face = await loadMarkFont();
    checkCoverage(textMarks, face);
    doc.registerFontkit(fontkit);
    font = await doc.embedFont(face.bytes, { subset: true });
  }
  const images = new Map<Mark, PDFImage>();
  for (const mark of marks) if (mark.kind === 'image') images.set(mark, await embedMarkImage(doc, mark, settings));
  const pages = doc.getPages();
  for (const [index, page] of pages.entries()) {
    signal.throwIfAborted();
    const fontKey = font ? page.node.newFontDictionary(MARK_FONT_NAME.replace(/\s/g, ''), font.ref) : undefined;
    const operators = (mark: Mark): PDFOperator[] => mark.kind === 'image'
      ? imageOperators(doc, page, images.get(mark)!, mark)
      : textOperators(doc, page, font!, fontKey!, mark, index, pages.length);
    const stream = (list: PDFOperator[]): PDFRef => doc.context.register(doc.context.contentStream(list));
    const under = marks.filter((m) => m.under).flatMap(operators);
    const over = marks.filter((m) => !m.under).flatMap(operators);
    const refs = contentRefs(doc, page);
    const wrapped = over.length > 0 && refs.length > 0 ? [stream([pushGraphicsState()]), ...refs, stream([popGraphicsState()])] : refs;
    const list = [...(under.length > 0 ? [stream(under)] : []), ...wrapped, ...(over.length > 0 ? [stream(over)] : [])];
    page.node.set(PDFName.of('Contents'), doc.context.obj(list));
    onPage(index + 1, pages.length);
    // Long documents: let an abort be seen between pages.
    if (index % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
  }
}

export interface MarkImageSettings {
  /** Decompression-bomb guard, as in the image engine. */
  maxInputPixels: number;
}

/** The longest side a mark image is embedded at: 2,000 px is 300 dpi across 6.7 inches. */
const MARK_IMAGE_SIDE = 2000;

/**
 * A mark's image decoded by libvips (bomb-guarded, turned upright as its EXIF says, in sRGB, no
 * larger than a mark needs) and embedded as its pixels with its transparency.
 */
async function embedMarkImage(doc: PDFDocument, mark: ImageMark, settings: MarkImageSettings): Promise<PDFImage> {
  const { default: sharp } = await import('../image/sharp-module.ts');
  const { embedPixels } = await import('../pdf/pixel-image.ts');
  const open = () => sharp(mark.path, { limitInputPixels: settings.maxInputPixels, failOn: 'error' });
  let hasAlpha: boolean;
  try {
    const meta = await open().metadata();
    if (!meta.width || !meta.height) throw new Error('it has no size');
    hasAlpha = meta.hasAlpha === true;
  } catch (error) {
    throw new ConversionFailure('input_invalid', `${mark.option}: the image cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const pixels = () => open().rotate().toColourspace('srgb').resize({ width: MARK_IMAGE_SIDE, height: MARK_IMAGE_SIDE, fit: 'inside', withoutEnlargement: true });
  try {
    return await embedPixels(doc, pixels, hasAlpha);
  } catch (error) {
    throw new ConversionFailure('input_invalid', `${mark.option}: the image cannot be decoded: ${error instanceof Error ? error.message : String(error)}`);
  }
}
