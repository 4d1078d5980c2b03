import { readFile, writeFile } from 'node:fs/promises';
import { PDFDocument, type PDFImage } from 'pdf-lib';
import type { Metadata, Sharp } from 'sharp';
import sharp from '../image/sharp-module.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import { checkOutputSize } from '../output-cap.ts';
import type { EngineJob } from '../types.ts';
import { PAGE_SIZES, type PageSize } from './formats.ts';
import { embedPixels } from './pixel-image.ts';

export interface ImageToPdfSettings {
  /** Decompression-bomb guard, as in the image engine. */
  maxInputPixels: number;
}

/** A JPEG embedded as it is, or pixels (pixel-image.ts) where the image is lossless or has alpha. */
type Encoded =
  | { kind: 'jpg'; bytes: Uint8Array }
  | { kind: 'pixels'; pixels: () => Sharp; hasAlpha: boolean };

/**
 * One image (every page of a multi-page TIFF) -> PDF. A JPEG goes in as it is when nothing needs
 * fixing; a PNG, and any image with transparency, as its pixels (lossless, alpha as a soft mask);
 * other formats, rotated or non-RGB JPEGs and animations are re-encoded as high-quality JPEG.
 */
export async function imageToPdf(job: EngineJob, settings: ImageToPdfSettings): Promise<void> {
  job.onProgress(0);
  const input = await readFile(job.inputPath);
  let meta: Metadata;
  let svg: SvgDrawing | undefined;
  try {
    // A gzip-compressed SVG (svgz) is read by libvips as it is.
    if (job.source === 'svg' || job.source === 'svgz') svg = await svgDrawing(input, settings.maxInputPixels);
    meta = await sharp(input, { limitInputPixels: settings.maxInputPixels, ...(svg ? { density: svg.density } : {}) }).metadata();
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The input cannot be decoded as ${job.source}: ${describe(error)}`);
  }
  // Pages of a TIFF are pages of the document; frames of a GIF or WebP animation are not.
  const pageCount = job.source === 'tiff' ? Math.max(1, meta.pages ?? 1) : 1;
  const pdf = await PDFDocument.create();
  const margin = typeof job.options.margin === 'number' ? job.options.margin : 0;
  const variant = (job.variant ?? 'fit') as PageSize | 'fit';

  for (let page = 0; page < pageCount; page++) {
    job.signal.throwIfAborted();
    const encoded = await encode(input, job.source, meta, page, settings, svg?.density);
    let image: PDFImage;
    try {
      image = encoded.kind === 'jpg' ? await pdf.embedJpg(encoded.bytes) : await embedPixels(pdf, encoded.pixels, encoded.hasAlpha);
    } catch (error) {
      if (error instanceof ConversionFailure) throw error;
      throw new ConversionFailure('input_invalid', encoded.kind === 'pixels'
        ? `The input cannot be decoded as ${job.source}: ${describe(error)}`
        : `The image cannot be embedded: ${describe(error)}`);
    }
    // Physical size from the image's resolution (72 dpi when it states none): a 300 dpi A4 scan
    // lands on A4 exactly. An SVG keeps its own size, whatever it was drawn at.
    const density = meta.density && meta.density > 0 ? meta.density : 72;
    const naturalWidth = svg?.width ?? (image.width * 72) / density;
    const naturalHeight = svg?.height ?? (image.height * 72) / density;
    let pageWidth: number;
    let pageHeight: number;
    if (variant === 'fit') {
      pageWidth = naturalWidth + 2 * margin;
      pageHeight = naturalHeight + 2 * margin;
    } else {
      const [short, long] = PAGE_SIZES[variant];
      // Landscape pages for landscape images.
      [pageWidth, pageHeight] = naturalWidth > naturalHeight ? [long, short] : [short, long];
    }
    const boxWidth = Math.max(1, pageWidth - 2 * margin);
    const boxHeight = Math.max(1, pageHeight - 2 * margin);
    // Scaled down to fit, never up: a small image stays sharp.
    const scale = Math.min(1, boxWidth / naturalWidth, boxHeight / naturalHeight);
    const width = naturalWidth * scale;
    const height = naturalHeight * scale;
    const target = pdf.addPage([pageWidth, pageHeight]);
    target.drawImage(image, { x: (pageWidth - width) / 2, y: (pageHeight - height) / 2, width, height });
    job.onProgress(Math.floor(((page + 1) / pageCount) * 90));
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  job.signal.throwIfAborted();
  const bytes = await pdf.save();
  checkOutputSize(bytes.length, job.maxOutputBytes);
  await writeFile(job.outputPath, bytes);
  job.onProgress(100);
}

async function encode(input: Buffer, source: string, meta: Metadata, page: number, settings: ImageToPdfSettings, density?: number): Promise<Encoded> {
  const upright = !meta.orientation || meta.orientation === 1;
  // 'truncated' fails on a cut-off file yet tolerates the benign warnings many camera JPEGs raise.
  const decode = { limitInputPixels: settings.maxInputPixels, failOn: 'truncated' as const, ...(density ? { density } : {}) };
  try {
    const passJpeg = source === 'jpg' && meta.format === 'jpeg' && upright && (meta.space === 'srgb' || meta.space === 'b-w');
    if (passJpeg) {
      // pdf-lib only reads a JPEG's header: decode it all once with libvips first, so a broken
      // file fails here instead of being embedded.
      await sharp(input, decode).stats();
      return { kind: 'jpg', bytes: input };
    }
    const pixels = () => sharp(input, { ...decode, page })
      .rotate() // applies EXIF orientation
      .toColourspace('srgb');
    const hasAlpha = meta.hasAlpha === true;
    const lossless = source === 'png' && meta.format === 'png' && (meta.pages ?? 1) === 1;
    // The pixels are decoded as they are embedded: a broken file fails there.
    if (hasAlpha || lossless) return { kind: 'pixels', pixels, hasAlpha };
    return { kind: 'jpg', bytes: await pixels().jpeg({ quality: 92, chromaSubsampling: '4:4:4' }).toBuffer() };
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The input cannot be decoded as ${source}: ${describe(error)}`);
  }
}

/** An SVG is drawn at 300 dpi, or less where that would pass this many pixels. */
const SVG_PIXEL_BUDGET = 40_000_000;
const SVG_DPI = 300;

/** An SVG's own size in points (at 72 dpi, a pixel a point) and the density it is drawn at. */
interface SvgDrawing {
  width: number;
  height: number;
  density: number;
}

/** 300 dpi prints sharp; less where that would pass the pixel budget or the pixel limit. */
async function svgDrawing(input: Buffer, maxInputPixels: number | false | undefined): Promise<SvgDrawing> {
  const natural = await sharp(input, { limitInputPixels: false }).metadata();
  const width = Math.max(1, natural.width ?? 1);
  const height = Math.max(1, natural.height ?? 1);
  const budget = Math.min(SVG_PIXEL_BUDGET, typeof maxInputPixels === 'number' && maxInputPixels > 0 ? maxInputPixels : SVG_PIXEL_BUDGET);
  return { width, height, density: Math.max(1, Math.min(SVG_DPI, Math.floor(72 * Math.sqrt(budget / (width * height))))) };
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'unknown error';
}
