import { stat } from 'node:fs/promises';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import { BACKGROUND_OPTION, backgroundOf, ffmpegColour } from '../image/background.ts';
import { asksForResize, pixelLimitFailure } from '../image/pixel-limit.ts';
import { findBinary, type FindOptions } from '../media/binaries.ts';
import { listEncoders } from '../media/ffmpeg-info.ts';
import { firstLine } from '../process/first-line.ts';
import { checkOutputSize } from '../output-cap.ts';
import { engineEnvironment, ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import {
  ICON_MAX_SIDE, ICON_OPTIONS, RASTER_FORMATS, RASTER_KEYS, SOURCE_DEMUXER, TARGET_ENCODING, type RasterFormat,
} from './formats.ts';

export interface RasterEngineOptions extends FindOptions {
  /** Decompression-bomb guard: an image with more pixels than this fails with input_invalid. */
  maxInputPixels?: number;
  /** Memory of one ffmpeg or ffprobe run, MiB; none when unset. */
  processMemoryMb?: number;
}

interface Tools {
  ffmpeg: string;
  ffprobe: string;
}

/** The largest image a file holds (an icon holds several sizes): its stream and size. */
interface StatedImage {
  stream: number;
  width: number;
  height: number;
}

const PROBE_TIME_LIMIT_MS = 30_000;
/** Messages of ffmpeg's that say the file, not the engine, is at fault. */
const INPUT_ERROR = /Invalid data|could not find codec parameters|does not contain any stream|Error while decoding|invalid|corrupt|truncated|End of file|not enough|unsupported/i;
const OUT_OF_MEMORY = /Cannot allocate memory|out of memory|std::bad_alloc|Failed to reallocate|ENOMEM/i;
/** Room for ffmpeg itself, its threads and its buffers, above what the file and the image take. */
const BASE_MEMORY_MB = 256;
const MiB = 1024 * 1024;

/**
 * BMP, ICO, PPM, PGM and PBM to PNG and back with ffmpeg, run as a process of its own (process
 * group, time limit, memory limit, niced), one demuxer named per format. The image engine converts
 * PNG to everything else: the registry composes those chains through this engine's PNG.
 */
export function createRasterEngine(settings: RasterEngineOptions = {}): Engine {
  let tools: Tools | undefined;
  return {
    name: 'raster',
    async probe(): Promise<EngineStatus> {
      tools = undefined;
      const ffmpeg = await findBinary('ffmpeg', settings);
      const ffprobe = await findBinary('ffprobe', settings);
      if (!ffmpeg || !ffprobe) return { name: 'raster', available: false, detail: 'ffmpeg or ffprobe not found (as for the media engine)' };
      try {
        const version = await firstLine(ffmpeg.path, ['-hide_banner', '-version']);
        const encoders = await listEncoders(ffmpeg.path);
        const missing = ['png', ...Object.values(TARGET_ENCODING).map((encoding) => encoding.codec)].filter((codec) => !encoders.has(codec));
        if (missing.length > 0) return { name: 'raster', available: false, binary: ffmpeg.path, detail: `this ffmpeg lacks the encoders ${missing.join(', ')}` };
        tools = { ffmpeg: ffmpeg.path, ffprobe: ffprobe.path };
        return { name: 'raster', available: true, binary: `${ffmpeg.path} (${ffmpeg.origin})`, version: version.replace(/^ffmpeg version\s+/, '').split(' ')[0] ?? version };
      } catch (error) {
        return { name: 'raster', available: false, binary: ffmpeg.path, detail: `ffmpeg does not run: ${error instanceof Error ? error.message : String(error)}` };
      }
    },
    pairs: (): ConversionPair[] => (tools ? rasterPairs() : []),
    formats: () => RASTER_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!tools) throw new ConversionFailure('internal_error', 'The raster engine was not probed or ffmpeg is unavailable.');
      return convertRaster(tools, job, settings);
    },
  };
}

function rasterPairs(): ConversionPair[] {
  const pairs: ConversionPair[] = [];
  // PNG is lossless and holds whatever these formats hold (alpha, grey, 1 bit): a faithful step.
  for (const source of RASTER_KEYS) pairs.push({ source, target: 'png', engine: 'raster', kind: 'image', options: [], variants: [], intermediate: true });
  for (const target of RASTER_KEYS) {
    const options = target === 'ico' ? ICON_OPTIONS : TARGET_ENCODING[target].opaque ? [BACKGROUND_OPTION] : [];
    pairs.push({ source: 'png', target, engine: 'raster', kind: 'image', options, variants: [] });
  }
  return pairs;
}

async function convertRaster(tools: Tools, job: EngineJob, settings: RasterEngineOptions): Promise<EngineOutput> {
  job.onProgress(0);
  const source = job.source as RasterFormat | 'png';
  const demuxer = SOURCE_DEMUXER[source];
  if (!demuxer) throw new ConversionFailure('internal_error', `The raster engine does not read ${job.source}.`);
  // The pipe demuxers hold the whole file (up to twice, while growing their buffer), and a decoded
  // frame takes 4 bytes a pixel, twice over with the encoder's copy: the memory limit is what the
  // file and the image it states need, never less than the engines' own.
  const fileMb = (await stat(job.inputPath)).size / MiB;
  const floor = settings.processMemoryMb;
  const reading = floor === undefined ? undefined : Math.ceil(Math.max(floor, BASE_MEMORY_MB + 3 * fileMb));
  const image = await largestImage(tools, job, demuxer, reading);
  const limit = settings.maxInputPixels;
  if (limit && image.width * image.height > limit) throw pixelLimitFailure(image, limit, asksForResize(job.options));
  const converting = reading === undefined ? undefined : Math.ceil(Math.max(reading, BASE_MEMORY_MB + 3 * fileMb + (image.width * image.height * 12) / MiB));

  const encoding = job.target === 'png' ? undefined : TARGET_ENCODING[job.target as RasterFormat];
  const args = ['-hide_banner', '-nostdin', '-v', 'error', ...guard(demuxer), '-i', `file:${job.inputPath}`];
  if (encoding?.opaque) {
    // Over a plane of the background colour, blended in RGB (exact colours, no trip through YUV).
    const background = ffmpegColour(backgroundOf(job.options));
    args.push(
      '-filter_complex', `color=c=${background}:s=${image.width}x${image.height},format=rgb24[bg];[0:${image.stream}]format=rgba[fg];[bg][fg]overlay=format=rgb:shortest=1[out]`,
      '-map', '[out]',
    );
  } else {
    args.push('-map', `0:${image.stream}`);
  }
  args.push('-frames:v', '1');
  if (job.target === 'png') {
    // Without a sample aspect ratio: ffmpeg writes a 1:1 one as a pHYs chunk of a million pixels a
    // metre, which readers take for 25,400 dpi (a PDF page of it would be a speck).
    args.push('-vf', 'setsar=0', '-c:v', 'png', '-f', 'image2', '-update', '1');
  } else {
    if (!encoding) throw new ConversionFailure('internal_error', `The raster engine does not write ${job.target}.`);
    if (job.target === 'ico') {
      const side = typeof job.options.size === 'number' ? Math.round(job.options.size) : Math.min(ICON_MAX_SIDE, Math.max(image.width, image.height));
      if (side !== Math.max(image.width, image.height)) {
        args.push('-vf', `scale=w=${side}:h=${side}:force_original_aspect_ratio=decrease:flags=lanczos`);
      }
    }
    args.push('-c:v', encoding.codec, ...(encoding.pixelFormat ? ['-pix_fmt', encoding.pixelFormat] : []), '-f', encoding.muxer);
    if (encoding.muxer === 'image2') args.push('-update', '1');
  }
  if (job.maxOutputBytes !== undefined) args.push('-fs', String(job.maxOutputBytes + 1));
  args.push('-y', `file:${job.outputPath}`);

  const result = await runProcess(tools.ffmpeg, args, runOptions(job, converting, job.timeLimitMs));
  const said = plainly(result.stderrTail, job);
  if (result.code !== 0) throw failureOf(job, said, converting, result.code ?? result.signal);
  const size = await stat(job.outputPath).then((s) => s.size, () => 0);
  if (size === 0) throw new ConversionFailure('conversion_failed', `ffmpeg wrote no image${said ? `: ${said}` : ''}.`);
  checkOutputSize(size, job.maxOutputBytes);
  job.onProgress(100);
  return { size };
}

/** Only the named demuxer, only local files: an upload is never probed into a playlist or a URL. */
function guard(demuxer: string): string[] {
  return ['-format_whitelist', demuxer, '-protocol_whitelist', 'file', '-f', demuxer];
}

function runOptions(job: EngineJob, memoryLimitMb: number | undefined, timeoutMs: number | undefined) {
  return {
    signal: job.signal,
    timeoutMs,
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    memoryLimitMb,
    env: engineEnvironment(),
  };
}

/** Reads the image sizes from the file's header with ffprobe (nothing decoded). */
async function largestImage(tools: Tools, job: EngineJob, demuxer: string, memoryLimitMb: number | undefined): Promise<StatedImage> {
  const lines: string[] = [];
  const result = await runProcess(
    tools.ffprobe,
    ['-hide_banner', '-v', 'error', ...guard(demuxer), '-show_entries', 'stream=index,codec_type,width,height', '-of', 'json', `file:${job.inputPath}`],
    { ...runOptions(job, memoryLimitMb, Math.min(PROBE_TIME_LIMIT_MS, job.timeLimitMs ?? PROBE_TIME_LIMIT_MS)), onStdoutLine: (line: string) => lines.push(line) },
  );
  const said = plainly(result.stderrTail, job);
  if (result.code !== 0) throw failureOf(job, said, memoryLimitMb, result.code ?? result.signal, true);
  let streams: { index?: number; codec_type?: string; width?: number; height?: number }[] = [];
  try {
    streams = (JSON.parse(lines.join('\n')) as { streams?: typeof streams }).streams ?? [];
  } catch {
    // An unreadable answer is an image without streams: refused below.
  }
  const images = streams
    .filter((s) => s.codec_type === 'video' && typeof s.index === 'number' && (s.width ?? 0) > 0 && (s.height ?? 0) > 0)
    .map((s) => ({ stream: s.index!, width: s.width!, height: s.height! }))
    .sort((a, b) => b.width * b.height - a.width * a.height);
  if (images.length === 0) throw new ConversionFailure('input_invalid', `The input cannot be decoded as ${job.source}: it holds no image${said ? ` (${said})` : ''}.`);
  return images[0]!;
}

/** ffmpeg's last words without the server's paths and the decoders' addresses (`[bmp @ 0x55d0...]`). */
function plainly(stderr: string, job: EngineJob): string {
  const named = stderr.split(`file:${job.inputPath}`).join('the input').split(job.inputPath).join('the input')
    .split(`file:${job.outputPath}`).join('the output').split(job.outputPath).join('the output');
  return lastLines(named.replace(/\[[\w:-]+ @ 0x[0-9a-f]+\] ?/g, ''));
}

function failureOf(job: EngineJob, said: string, memoryLimitMb: number | undefined, exit: number | string | null, reading = false): ConversionFailure {
  if (OUT_OF_MEMORY.test(said)) {
    return new ConversionFailure('memory_limit', `The image needed more memory than its limit of ${memoryLimitMb ?? '?'} MB.`);
  }
  if (reading || INPUT_ERROR.test(said)) return new ConversionFailure('input_invalid', `The input cannot be decoded as ${job.source}: ${said || `ffmpeg exited with ${exit}`}`);
  return new ConversionFailure('conversion_failed', `ffmpeg failed (exit ${exit}): ${said || 'no message'}`);
}
