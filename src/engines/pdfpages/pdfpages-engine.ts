import { access, mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ConversionFailure, HandOver } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import { numberedName, writeZip, type ArchiveEntry } from '../archive.ts';
import { checkOutputSize, outputCapFailure } from '../output-cap.ts';
import { pageNumbers } from '../page-list.ts';
import { scratchDirFor } from '../scratch.ts';
import { pageText } from '../page-text.ts';
import { DEFAULT_MAX_INPUT_PIXELS, type Engine, type EngineJob, type EngineOutput, type EngineStatus } from '../types.ts';
import { DEFAULT_DPI, IMAGE_TARGETS, MAX_ARCHIVE_PAGES, MAX_SIDE, PDF_PAGES_FORMATS, pageOptions, type ImageTarget } from './formats.ts';
import { loadPdfium, pdfiumPackage, type PdfDocument } from './pdfium.ts';

export interface PdfPagesEngineOptions {
  /** The most pixels a render may have (the image engine's decompression-bomb limit). */
  maxInputPixels?: number;
}

/**
 * libjpeg's Huffman optimisation keeps the whole image's coefficients in memory (about 6 bytes a
 * pixel, measured: 570 MB for 100 million pixels, beside PDFium's 300 MB of pixels): past this
 * many pixels a JPEG is written with the standard tables instead, larger (twice the size for a
 * page of text on white, measured) but within the engine host's memory.
 */
const JPEG_OPTIMISE_MAX_PIXELS = 16_000_000;
/** Text is written in pieces of about this many characters. */
const TEXT_CHUNK = 64 * 1024;

/** 10000 -> "10,000", without Intl (whose first use costs milliseconds). */
export function grouped(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * PDF pages -> png, jpg, webp (one page, or several as a zip, rendered by PDFium) and PDF -> txt (the text of every
 * page, pages separated by a form feed). PDFium is WebAssembly (@embedpdf/pdfium), loaded once
 * per process with the first conversion; sharp encodes the rendered pixels.
 */
export function createPdfPagesEngine(settings: PdfPagesEngineOptions = {}): Engine {
  const maxPixels = settings.maxInputPixels ?? DEFAULT_MAX_INPUT_PIXELS;
  return {
    name: 'pdfpages',
    readsAnyNameOf: ['pdf'],
    /** Finds the package and its WebAssembly module without loading them (a daemon probes every engine at start). */
    async probe(): Promise<EngineStatus> {
      const { version, wasmPath } = pdfiumPackage();
      await access(wasmPath);
      return { name: 'pdfpages', available: true, binary: '@embedpdf/pdfium (PDFium, WebAssembly)', version, detail: `renders with sharp; at most ${grouped(maxPixels)} pixels a page` };
    },
    pairs(): ConversionPair[] {
      const pairs: ConversionPair[] = IMAGE_TARGETS.map((target) => ({
        source: 'pdf', target, engine: 'pdfpages', kind: 'document', options: pageOptions(target), variants: [],
      }));
      pairs.push({ source: 'pdf', target: 'txt', engine: 'pdfpages', kind: 'document', options: [], variants: [] });
      return pairs;
    },
    formats: () => PDF_PAGES_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      job.signal.throwIfAborted();
      job.onProgress(0);
      const isImage = (IMAGE_TARGETS as readonly string[]).includes(job.target);
      if (job.source !== 'pdf' || (!isImage && job.target !== 'txt')) {
        throw new ConversionFailure('conversion_failed', `The pdfpages engine cannot convert ${job.source} to ${job.target}.`);
      }
      const pdfium = await loadPdfium();
      return pdfium.exclusive(async () => {
        job.signal.throwIfAborted();
        const document = pdfium.open(job.inputPath);
        try {
          if (document.pageCount < 1) throw new ConversionFailure('input_invalid', 'The PDF has no pages.');
          const output = !isImage
            ? await extractText(document, job)
            : typeof job.options.pages === 'string'
              ? await renderPages(document, job, job.target as ImageTarget, maxPixels, job.options.pages)
              : await renderPage(document, job, job.target as ImageTarget, maxPixels, integer(job, 'page') ?? 1, job.outputPath);
          job.onProgress(100);
          return output;
        } finally {
          document.close();
        }
      });
    },
  };
}

function integer(job: EngineJob, name: string): number | undefined {
  const value = job.options[name];
  return typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : undefined;
}

/** Pixel size of a page of `width` x `height` points: `width` pixels wide when given, else at `dpi`. */
export function pixelSize(points: { width: number; height: number }, options: { dpi?: number; width?: number }): { width: number; height: number } {
  if (options.width !== undefined) {
    return { width: options.width, height: Math.max(1, Math.round((points.height * options.width) / points.width)) };
  }
  const scale = (options.dpi ?? DEFAULT_DPI) / 72;
  return { width: Math.max(1, Math.round(points.width * scale)), height: Math.max(1, Math.round(points.height * scale)) };
}

/**
 * The pages a list names, each rendered as the one-page conversion renders it, into one zip
 * (`page-01.png`, ...), in the list's order.
 */
async function renderPages(document: PdfDocument, job: EngineJob, target: ImageTarget, maxPixels: number, list: string): Promise<EngineOutput> {
  const numbers = pageNumbers(list, document.pageCount, 'pages');
  const most = Math.min(job.maxPages ?? MAX_ARCHIVE_PAGES, MAX_ARCHIVE_PAGES);
  if (numbers.length > most) {
    throw new ConversionFailure('input_invalid', `pages: ${grouped(numbers.length)} pages asked for; at most ${grouped(most)} are rendered in one conversion${most < MAX_ARCHIVE_PAGES ? ' on this plan' : ''}.`, { pages: numbers.length, limit: most });
  }
  // One page is the image itself, not a zip of one.
  if (numbers.length === 1) return renderPage(document, job, target, maxPixels, numbers[0]!, job.outputPath);
  const scratch = scratchDirFor(job.outputPath);
  await mkdir(scratch, { mode: 0o700 });
  try {
    const entries: ArchiveEntry[] = [];
    let written = 0;
    const last = Math.max(...numbers);
    for (const [index, number] of numbers.entries()) {
      const name = numberedName('page', number, last, target);
      const path = join(scratch, `${index}-${name}`);
      const remaining = job.maxOutputBytes === undefined ? undefined : job.maxOutputBytes - written;
      written += (await renderPage(document, { ...job, maxOutputBytes: remaining }, target, maxPixels, number, path)).size ?? 0;
      entries.push({ path, name: entries.some((entry) => entry.name === name) ? `${index + 1}-${name}` : name });
      job.onProgress(Math.floor(((index + 1) / numbers.length) * 95));
      // Lets an abort land between pages when the engine runs in this process.
      await new Promise<void>((resolve) => setImmediate(resolve));
      job.signal.throwIfAborted();
    }
    return { size: await writeZip(entries, job.outputPath, job.signal, job.maxOutputBytes), archive: true };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function renderPage(document: PdfDocument, job: EngineJob, target: ImageTarget, maxPixels: number, number: number, outputPath: string): Promise<EngineOutput> {
  const count = document.pageCount;
  if (number > count) {
    throw new ConversionFailure('input_invalid', `The PDF has ${grouped(count)} page${count === 1 ? '' : 's'}; page ${grouped(number)} does not exist.`);
  }
  const page = document.page(number - 1);
  try {
    const size = pixelSize(page, { dpi: integer(job, 'dpi'), width: integer(job, 'width') });
    const pixels = size.width * size.height;
    if (pixels > maxPixels) {
      throw new ConversionFailure(
        'input_invalid',
        `Page ${grouped(number)} would be ${grouped(size.width)} x ${grouped(size.height)} = ${grouped(pixels)} pixels, over the limit of ${grouped(maxPixels)} pixels: ask for a lower dpi or a width.`,
      );
    }
    const side = MAX_SIDE[target];
    if (Math.max(size.width, size.height) > side) {
      throw new ConversionFailure(
        'input_invalid',
        `Page ${grouped(number)} would be ${grouped(size.width)} x ${grouped(size.height)} pixels; ${target.toUpperCase()} images have at most ${grouped(side)} pixels a side: ask for a lower dpi or a width.`,
      );
    }
    job.signal.throwIfAborted();
    const bitmap = page.render(size.width, size.height);
    try {
      job.onProgress(50);
      job.signal.throwIfAborted();
      const { default: sharp } = await import('../image/sharp-module.ts');
      const quality = integer(job, 'quality');
      const image = sharp(bitmap.pixels, { raw: { width: bitmap.width, height: bitmap.height, channels: 3 }, limitInputPixels: Math.max(pixels, 1) });
      const encoded = target === 'png' ? image.png() : target === 'jpg' ? image.jpeg({ quality, optimiseCoding: pixels <= JPEG_OPTIMISE_MAX_PIXELS }) : image.webp({ quality });
      const info = await encoded.toFile(outputPath);
      checkOutputSize(info.size, job.maxOutputBytes);
      return { size: info.size };
    } finally {
      bitmap.free();
    }
  } finally {
    page.close();
  }
}

/**
 * Every page's text in order, each page's last line ended by a newline, pages separated by a form
 * feed (src/engines/page-text.ts); UTF-8. A PDF
 * whose pages have no text at all (a scan) is handed over to OCR, where an OCR engine serves
 * pdf -> txt as its fallback; where none does, the empty text written stands.
 */
async function extractText(document: PdfDocument, job: EngineJob): Promise<EngineOutput> {
  const sink = await TextFile.create(job.outputPath, job.maxOutputBytes);
  let size: number;
  let seen = false;
  let lastText = '';
  const count = document.pageCount;
  try {
    const step = Math.max(1, Math.floor(count / 100));
    for (let index = 0; index < count; index++) {
      lastText = pageText(document.text(index));
      // pageText cuts white space: a page with anything left has a text layer.
      seen ||= lastText !== '';
      await sink.write((index > 0 ? '\f' : '') + lastText);
      if (index % step === step - 1) {
        job.onProgress(Math.floor(((index + 1) / count) * 99));
        // Lets an abort land between pages when the engine runs in this process.
        await new Promise<void>((resolve) => setImmediate(resolve));
        job.signal.throwIfAborted();
      }
    }
    // The file ends with a newline, after an empty last page too.
    if (lastText === '') await sink.write('\n');
    size = await sink.close();
  } catch (error) {
    await sink.discard();
    throw error;
  }
  if (!seen) throw new HandOver(`The PDF has no text layer: none of its ${grouped(count)} page${count === 1 ? '' : 's'} holds text (a scan).`, { size });
  return { size };
}

/** A UTF-8 file written in chunks that stops at the output cap, and leaves nothing behind when discarded. */
class TextFile {
  private pending: string[] = [];
  private pendingLength = 0;
  private written = 0;

  private constructor(private readonly path: string, private readonly handle: FileHandle, private readonly maxBytes: number | undefined) {}

  static async create(path: string, maxBytes: number | undefined): Promise<TextFile> {
    return new TextFile(path, await open(path, 'w'), maxBytes);
  }

  async write(text: string): Promise<void> {
    this.written += Buffer.byteLength(text);
    if (this.maxBytes !== undefined && this.written > this.maxBytes) throw outputCapFailure(this.maxBytes);
    this.pending.push(text);
    this.pendingLength += text.length;
    if (this.pendingLength >= TEXT_CHUNK) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingLength = 0;
    await this.handle.write(chunk, null, 'utf8');
  }

  /** Bytes written. */
  async close(): Promise<number> {
    await this.flush();
    await this.handle.close();
    return this.written;
  }

  async discard(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await rm(this.path, { force: true });
  }
}
