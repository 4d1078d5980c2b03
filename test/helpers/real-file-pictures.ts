/**
 * Pictures of the real-file suite, compared with their sources by libvips (sharp) and PDFium
 * directly, and by readers written here for what libvips does not read (BMP results, XPM
 * sources): an image result against its source flattened onto white (a transparent ground turned
 * black, or artwork gone, is far off), its transparency against the source's, an image's PDF
 * page drawn again, and a document's page picture decoded and looked at (not blank, not black).
 */
import { readFile } from 'node:fs/promises';
import { PDFDocument } from 'pdf-lib';
import sharp, { type Sharp } from 'sharp';
import { loadPdfium } from '../../src/engines/pdfpages/pdfium.ts';

/** Targets that keep transparency: their alpha must follow the source's. */
const WITH_ALPHA = new Set(['png', 'webp', 'gif', 'tiff', 'avif']);
/**
 * Mean difference per channel (0-255) a right result stays within: lossy encoders and GIF's
 * palette move colours a little, a lost or black ground moves them by a hundred and more.
 */
const COLOUR_TOLERANCE: Record<string, number> = { jpg: 10, webp: 10, avif: 10, gif: 12 };
const ALPHA_TOLERANCE: Record<string, number> = { gif: 16, webp: 8, avif: 8 };

const WHITE = { r: 255, g: 255, b: 255 };

interface Raw {
  data: Buffer;
  width: number;
  height: number;
}

async function flattened(image: Sharp, width: number, height: number): Promise<Buffer> {
  return image.flatten({ background: WHITE }).removeAlpha().resize(width, height, { fit: 'fill' }).raw().toBuffer();
}

async function alpha(image: Sharp, width: number, height: number): Promise<Buffer> {
  return image.ensureAlpha().extractChannel(3).resize(width, height, { fit: 'fill' }).raw().toBuffer();
}

function meanDifference(a: Buffer, b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

/**
 * What is wrong with an image result of an image (empty: nothing): its shape, its colours against
 * the source's on white, its transparency against the source's.
 */
export async function pictureProblems(reference: () => Sharp, made: () => Sharp, target: string): Promise<string[]> {
  const problems: string[] = [];
  const result = await made().metadata();
  const source = await reference().metadata();
  const { width, height } = result;
  if (!width || !height) return ['the result has no size'];
  if (Math.abs(width / height - source.width! / source.height!) > 0.02) problems.push(`${width}x${height}, the source is ${source.width}x${source.height}`);
  const colour = meanDifference(await flattened(made(), width, height), await flattened(reference(), width, height));
  if (colour > (COLOUR_TOLERANCE[target] ?? 4)) problems.push(`colours differ from the source on white by ${colour.toFixed(1)} on average`);
  if (WITH_ALPHA.has(target)) {
    if (!result.hasAlpha && source.hasAlpha) problems.push('transparency lost');
    const lost = meanDifference(await alpha(made(), width, height), await alpha(reference(), width, height));
    if (lost > (ALPHA_TOLERANCE[target] ?? 2)) problems.push(`transparency differs by ${lost.toFixed(1)} on average`);
  }
  return problems;
}

/**
 * A BMP read by hand (libvips has no BMP reader): uncompressed 24-bit rows, or 32-bit ones whose
 * fourth byte is ignored as most readers ignore it, bottom-up unless the height is negative.
 */
export function readBmp(bytes: Buffer): Sharp {
  if (bytes.toString('latin1', 0, 2) !== 'BM') throw new Error('not a BMP (no BM signature)');
  const offset = bytes.readUInt32LE(10);
  const width = bytes.readInt32LE(18);
  const rawHeight = bytes.readInt32LE(22);
  const bits = bytes.readUInt16LE(28);
  const compression = bytes.readUInt32LE(30);
  if (!(bits === 24 && compression === 0) && !(bits === 32 && (compression === 0 || compression === 3))) {
    throw new Error(`a ${bits}-bit BMP of compression ${compression}: the real-file suite reads uncompressed 24 and 32-bit ones`);
  }
  const height = Math.abs(rawHeight);
  const step = bits / 8;
  const stride = Math.ceil((width * step) / 4) * 4;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const row = offset + (rawHeight > 0 ? height - 1 - y : y) * stride;
    for (let x = 0; x < width; x++) {
      const at = row + x * step;
      data.set([bytes[at + 2]!, bytes[at + 1]!, bytes[at]!], (y * width + x) * 3);
    }
  }
  return sharp(data, { raw: { width, height, channels: 3 } });
}

/** The first page of a PDF drawn by PDFium at the reference's size, on white. */
async function firstPage(path: string, width: number, height: number): Promise<Raw & { aspect: number }> {
  const pdfium = await loadPdfium();
  return pdfium.exclusive(async () => {
    const document = pdfium.open(path);
    try {
      const page = document.page(0);
      try {
        const bitmap = page.render(width, height);
        try {
          return { data: Buffer.from(bitmap.pixels), width, height, aspect: page.width / page.height };
        } finally {
          bitmap.free();
        }
      } finally {
        page.close();
      }
    } finally {
      document.close();
    }
  });
}

/** What is wrong with an image's PDF: one page, the source's shape, drawn as the source on white. */
export async function imagePdfProblems(reference: () => Sharp, output: string): Promise<string[]> {
  const pages = (await PDFDocument.load(await readFile(output))).getPageCount();
  if (pages !== 1) return [`${pages} pages, not one`];
  const source = await reference().metadata();
  // Small icons are drawn larger, so that a pixel's edge does not weigh as much as its colour.
  const scale = Math.max(1, Math.ceil(64 / Math.min(source.width!, source.height!)));
  const width = source.width! * scale;
  const height = source.height! * scale;
  const page = await firstPage(output, width, height);
  const problems: string[] = [];
  if (Math.abs(page.aspect - width / height) > 0.02) problems.push(`the page's shape (${page.aspect.toFixed(3)}) is not the image's (${(width / height).toFixed(3)})`);
  const colour = meanDifference(page.data, await flattened(reference(), width, height));
  if (colour > 8) problems.push(`the page differs from the source on white by ${colour.toFixed(1)} on average`);
  return problems;
}

/**
 * What is wrong with a picture of a document's page: undecodable, tiny, one flat colour, or
 * (where the source page's shape is known) another shape.
 */
export async function pagePictureProblems(output: Buffer, aspect?: number): Promise<string[]> {
  const { data, info } = await sharp(output).flatten({ background: WHITE }).greyscale().raw().toBuffer({ resolveWithObject: true });
  const problems: string[] = [];
  if (info.width < 100 || info.height < 100) problems.push(`only ${info.width}x${info.height}`);
  if (aspect !== undefined && Math.abs(info.width / info.height - aspect) > 0.02) problems.push(`shaped ${(info.width / info.height).toFixed(3)}, the page ${aspect.toFixed(3)}`);
  let sum = 0;
  let squares = 0;
  let dark = 0;
  for (const value of data) {
    sum += value;
    squares += value * value;
    if (value < 128) dark++;
  }
  const mean = sum / data.length;
  const deviation = Math.sqrt(squares / data.length - mean * mean);
  if (deviation < 4) problems.push(`one flat colour (grey ${mean.toFixed(0)})`);
  if (dark / data.length > 0.9) problems.push(`${Math.round((100 * dark) / data.length)} % of it is dark`);
  return problems;
}

/** The shape (width / height) of a PDF's first page as shown, read by pdf-lib. */
export async function firstPageAspect(path: string): Promise<number> {
  const page = (await PDFDocument.load(await readFile(path), { updateMetadata: false })).getPage(0);
  const { width, height } = page.getSize();
  return page.getRotation().angle % 180 === 0 ? width / height : height / width;
}

/** X11's names for the colours XPM files use most. */
const NAMED: Record<string, [number, number, number]> = {
  black: [0, 0, 0], white: [255, 255, 255], red: [255, 0, 0], green: [0, 255, 0], blue: [0, 0, 255],
  yellow: [255, 255, 0], cyan: [0, 255, 255], magenta: [255, 0, 255], gray: [190, 190, 190], grey: [190, 190, 190],
};

function xpmColour(spec: string): [number, number, number, number] {
  const value = spec.toLowerCase();
  if (value === 'none') return [0, 0, 0, 0];
  const hex = /^#([0-9a-f]+)$/.exec(value)?.[1];
  if (hex && hex.length % 3 === 0) {
    const size = hex.length / 3;
    const channel = (index: number) => Math.round((Number.parseInt(hex.slice(index * size, (index + 1) * size), 16) * 255) / (16 ** size - 1));
    return [channel(0), channel(1), channel(2), 255];
  }
  const named = NAMED[value];
  if (!named) throw new Error(`the XPM reader of the real-file suite knows no colour "${spec}": add it`);
  return [...named, 255];
}

/**
 * An XPM read by hand (the strings of its C array: header, colours by their `c` key, rows), as
 * RGBA for sharp: the source as its author drew it, without the engine that converts it.
 */
export function readXpm(text: string): Sharp {
  const lines = [...text.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1]!);
  const [width, height, count, perPixel] = lines[0]!.trim().split(/\s+/).map(Number) as [number, number, number, number];
  const colours = new Map<string, [number, number, number, number]>();
  for (const line of lines.slice(1, 1 + count)) {
    const tokens = line.slice(perPixel).trim().split(/\s+/);
    const visual = tokens.indexOf('c') >= 0 ? tokens.indexOf('c') : tokens.indexOf('m');
    colours.set(line.slice(0, perPixel), xpmColour(tokens[visual + 1]!));
  }
  const data = Buffer.alloc(width * height * 4);
  lines.slice(1 + count, 1 + count + height).forEach((row, y) => {
    for (let x = 0; x < width; x++) {
      const colour = colours.get(row.slice(x * perPixel, (x + 1) * perPixel));
      if (!colour) throw new Error(`XPM pixel ${x},${y} has no colour`);
      data.set(colour, (y * width + x) * 4);
    }
  });
  return sharp(data, { raw: { width, height, channels: 4 } });
}
