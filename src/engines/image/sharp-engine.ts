import { readFile } from 'node:fs/promises';
import type { Sharp } from 'sharp';
import sharp from './sharp-module.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import { ANY_NAME_SOURCES, BYTES_SOURCES, IMAGE_FORMATS, IMAGE_TARGETS, type ImageTarget } from './formats.ts';
import { imageOptions, MULTI_PAGE_SOURCES, MULTI_PAGE_TARGETS, OPAQUE_TARGETS } from './options.ts';
import { backgroundOf } from './background.ts';
import { decodeXpm, type DecodedXpm } from './xpm.ts';
import { decodeHevcToPng, findHeifDecoder, HEVC_INSTALL_HINT, removeWorkDir } from './heif-hevc.ts';
import { asksForResize, pixelLimitFailure } from './pixel-limit.ts';
import { withInputFile } from '../input-file.ts';
import { scratchDirFor } from '../scratch.ts';
import { smallInputBytes } from './small-input.ts';

export interface ImageEngineOptions {
  /** Decompression-bomb guard: images with more pixels than this fail with input_invalid. */
  maxInputPixels: number;
  /** Memory of a helper process (libheif's HEVC decoder), MiB; none when unset. */
  processMemoryMb?: number;
}

const FIT_VALUES = new Set(['inside', 'cover', 'contain', 'fill', 'outside']);
type Fit = 'inside' | 'cover' | 'contain' | 'fill' | 'outside';

/** Messages of a result that could not be written (a full disk), whatever the format's writer. */
const WRITE_ERROR = /No space left|ENOSPC|Disk quota|write error|unable to write/i;

/** Messages libvips gives for input it cannot decode (as opposed to failures of the engine itself). */
const INPUT_ERROR = /unsupported image format|corrupt|premature end|bad seek|improper image header|not a known file format|pixel limit|Input file|VipsJpeg|VipsPng|gifload|webpload|heifload|tiff|svgload|Invalid|truncated|decode/i;

/** The longest timeout sharp takes, in seconds. */
const SHARP_MAX_TIMEOUT_S = 3600;

export function createImageEngine(options: ImageEngineOptions): Engine {
  let sources: string[] = [];

  return {
    name: 'image',
    async probe(): Promise<EngineStatus> {
      const heif = sharp.format.heif;
      sources = ['jpg', 'png', 'webp', 'gif', 'tiff', 'svg', 'svgz', 'xpm'];
      // AVIF and HEIF decoding depend on how libvips was built; offer them only when present.
      if (heif?.input?.file) sources.push('avif', 'heif');
      const hevc = await findHeifDecoder();
      return {
        name: 'image', available: true, binary: 'sharp/libvips', version: `${sharp.versions.sharp} / ${sharp.versions.vips}`,
        detail: hevc ? `HEVC HEIC photos decoded by ${hevc}` : `HEVC HEIC photos fail: ${HEVC_INSTALL_HINT}`,
      };
    },
    pairs(): ConversionPair[] {
      return sources.flatMap((source) =>
        IMAGE_TARGETS.map((target) => ({
          source, target, engine: 'image', kind: 'image' as const, options: imageOptions(source, target), variants: [],
          // PNG is lossless: the step to the formats only another engine writes (BMP, ICO, PDF).
          ...(target === 'png' ? { intermediate: true } : {}),
        })),
      );
    },
    formats: () => IMAGE_FORMATS,
    convert: (job) => convertImage(job, options),
    readsAnyNameOf: ANY_NAME_SOURCES,
    picksReaderFromBytes: true,
    readsBytesOf: BYTES_SOURCES,
  };
}

/** What sharp is given: a file it reads itself, the bytes of one (EngineJob.inputBytes), or pixels decoded here (an XPM). */
type SharpInput = string | Buffer | DecodedXpm;

async function convertImage(job: EngineJob, settings: ImageEngineOptions): Promise<EngineOutput> {
  // Bytes of a source read from a file below (an XPM's text, a HEIC's decoder): written as one.
  if (job.inputBytes && !BYTES_SOURCES.includes(job.source)) return withInputFile(job, (onDisk) => convertImage(onDisk, settings));
  if (job.source === 'xpm') {
    const limits = { maxInputPixels: settings.maxInputPixels, resized: asksForResize(job.options), signal: job.signal };
    return convertWithSharp(job, settings, await decodeXpm(await readFile(job.inputPath, 'latin1'), limits));
  }
  if (job.source !== 'heif' || !(await isHevc(job, settings))) return convertWithSharp(job, settings, job.inputBytes ?? (await smallInputBytes(job)) ?? job.inputPath);
  const decoder = await findHeifDecoder();
  if (!decoder) {
    // A libvips built with libde265 reads it; the prebuilt one cannot, and then says what to install.
    try {
      return await convertWithSharp(job, settings, job.inputPath);
    } catch (error) {
      if (error instanceof ConversionFailure && error.code === 'input_invalid') {
        throw new ConversionFailure('conversion_failed', `This HEIC image is compressed with HEVC (as iPhones save photos), which this server cannot decode yet: ${HEVC_INSTALL_HINT}.`);
      }
      throw error;
    }
  }
  const workDir = scratchDirFor(job.outputPath);
  try {
    const decoded = await decodeHevcToPng(decoder, {
      inputPath: job.inputPath, workDir, signal: job.signal, timeLimitMs: job.timeLimitMs, memoryLimitMb: settings.processMemoryMb,
    });
    return await convertWithSharp(job, settings, decoded);
  } finally {
    await removeWorkDir(workDir);
  }
}

/**
 * Whether a HEIF's header says HEVC (an iPhone's HEIC), after the pixel limit is checked from
 * the header: the decoder that reads it must not be handed a bomb.
 */
async function isHevc(job: EngineJob, settings: ImageEngineOptions): Promise<boolean> {
  const meta = await sharp(job.inputPath, { limitInputPixels: false }).metadata().catch(() => null);
  if (meta?.compression !== 'hevc') return false;
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (settings.maxInputPixels > 0 && width * height > settings.maxInputPixels) {
    throw pixelLimitFailure({ width, height }, settings.maxInputPixels, asksForResize(job.options));
  }
  return true;
}

async function convertWithSharp(job: EngineJob, settings: ImageEngineOptions, input: SharpInput): Promise<EngineOutput> {
  const target = job.target as ImageTarget;
  // Every page where the target holds pages (a multi-page TIFF to TIFF, GIF or WebP keeps them
  // all); else one: `page`, or the first.
  const page = typeof job.options.page === 'number' ? Math.round(job.options.page) : null;
  if (page !== null) await checkPageExists(job, page);
  const allPages = page === null && MULTI_PAGE_TARGETS.has(target) && MULTI_PAGE_SOURCES.has(job.source);
  job.onProgress(0);
  let pipeline: Sharp = typeof input === 'string' || Buffer.isBuffer(input)
    ? sharp(input, {
      limitInputPixels: settings.maxInputPixels,
      ...(allPages ? { pages: -1 } : page !== null ? { page: page - 1 } : {}),
      failOn: 'error',
      sequentialRead: true,
    })
    : sharp(input.pixels, { raw: { width: input.width, height: input.height, channels: 4 }, limitInputPixels: settings.maxInputPixels });
  // No separate metadata() probe first: it would open and parse the file a second time; a decode
  // failure surfaces from toFile() and is told apart from engine failures by its message.
  job.signal.throwIfAborted();
  pipeline = resize(pipeline, job);
  pipeline = job.options.strip === false ? pipeline.keepMetadata() : pipeline;
  if (OPAQUE_TARGETS.has(target)) pipeline = pipeline.flatten({ background: backgroundOf(job.options) });
  pipeline = encode(pipeline, target, job.options.quality);
  // An abort only stops waiting: libvips would go on holding a thread of libuv's pool (shared with
  // the daemon's file I/O). Its own timeout stops the work itself, at the job's limit.
  // libvips takes at most an hour (sharp refuses more); a chain's limit is its steps' together (an image's, then OCR's).
  if (job.timeLimitMs !== undefined) pipeline = pipeline.timeout({ seconds: Math.min(SHARP_MAX_TIMEOUT_S, Math.max(1, Math.ceil(job.timeLimitMs / 1000))) });
  let size: number;
  try {
    size = (await pipeline.toFile(job.outputPath)).size;
  } catch (error) {
    if (job.signal.aborted) throw job.signal.reason;
    const message = describe(error);
    // Checked first: a full disk shows in a writer's message ("tiff2vips: ... write error"), which
    // the input patterns would take for the input's fault.
    if (WRITE_ERROR.test(message)) throw new ConversionFailure('conversion_failed', `The result could not be written: ${message}`);
    if (PIXEL_LIMIT.test(message)) throw await pixelLimitOf(job, settings.maxInputPixels);
    if (INPUT_ERROR.test(message)) throw new ConversionFailure('input_invalid', `The input cannot be decoded as ${job.source}: ${message}`);
    throw new ConversionFailure('conversion_failed', `Image conversion failed: ${message}`);
  }
  job.signal.throwIfAborted();
  job.onProgress(100);
  return { size };
}

function resize(pipeline: Sharp, job: EngineJob): Sharp {
  const width = typeof job.options.width === 'number' ? Math.round(job.options.width) : undefined;
  const height = typeof job.options.height === 'number' ? Math.round(job.options.height) : undefined;
  if (width === undefined && height === undefined) return pipeline;
  const fitOption = String(job.options.fit ?? 'inside');
  const fit: Fit = FIT_VALUES.has(fitOption) ? (fitOption as Fit) : 'inside';
  return pipeline.resize({ width, height, fit, withoutEnlargement: false });
}

function encode(pipeline: Sharp, target: ImageTarget, rawQuality: unknown): Sharp {
  const quality = typeof rawQuality === 'number' ? rawQuality : 80;
  switch (target) {
    case 'jpg': return pipeline.jpeg({ quality, mozjpeg: false });
    case 'png': return pipeline.png();
    case 'webp': return pipeline.webp({ quality });
    // AVIF reaches JPEG's visual quality at a lower number (sharp's default is 50 for JPEG's 80),
    // so the shared 1-100 scale is mapped down; effort 2 keeps encoding time near the other formats.
    case 'avif': return pipeline.avif({ quality: Math.max(1, Math.round(quality * 0.64)), effort: 2 });
    case 'gif': return pipeline.gif();
    case 'tiff': return pipeline.tiff({ compression: 'lzw' });
  }
}

const PIXEL_LIMIT = /exceeds pixel limit/i;

/** A page past the last fails in words, with the count (from the header: nothing decoded). */
async function checkPageExists(job: EngineJob, page: number): Promise<void> {
  const meta = await sharp(job.inputBytes ?? job.inputPath, { limitInputPixels: false }).metadata().catch(() => null);
  if (!meta) return; // not readable at all: the conversion says why
  const pages = meta.pages ?? 1;
  if (page > pages) {
    const held = pages === 1 ? 'one page' : `${pages.toLocaleString('en-US')} pages`;
    throw new ConversionFailure('input_invalid', `The ${job.source.toUpperCase()} image has ${held}; page ${page.toLocaleString('en-US')} does not exist.`, { pages, page });
  }
}

/**
 * libvips refuses an image over the pixel limit before decoding it ("Input image exceeds pixel
 * limit"), and says neither the image's size nor the limit. Its header tells the size (read
 * without the limit: only the header is parsed).
 */
async function pixelLimitOf(job: EngineJob, limit: number | false | undefined): Promise<ConversionFailure> {
  const meta = await sharp(job.inputBytes ?? job.inputPath, { limitInputPixels: false }).metadata().catch(() => null);
  return pixelLimitFailure(meta && { width: meta.width, height: meta.pageHeight ?? meta.height }, limit, asksForResize(job.options));
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 300) ?? 'unknown error';
}
