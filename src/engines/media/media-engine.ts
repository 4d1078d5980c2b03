import { mkdtemp, rm, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import { checkOutputSize } from '../output-cap.ts';
import { ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import type { Engine, EngineJob, EngineStatus } from '../types.ts';
import { buildPlan, REQUIRED_ENCODERS } from './args.ts';
import { findBinary, type FindOptions } from './binaries.ts';
import { firstLine } from '../process/first-line.ts';
import { listEncoders } from './ffmpeg-info.ts';
import {
  AUDIO_SOURCES, AUDIO_TARGETS, FRAME_TARGETS, MEDIA_FORMATS, VIDEO_SOURCES, VIDEO_TARGETS,
} from './formats.ts';
import { audioOptions, frameOptions, videoOptions, videoVariants } from './options.ts';
import { mpegTsReader, probeMedia, remuxTransportStream, type MpegTsReader } from './probe.ts';
import { ProgressReader } from './progress.ts';

export interface MediaEngineOptions extends FindOptions {
  /**
   * Wall-clock limit of one ffmpeg run; past it the process group is killed and the job fails with
   * ConversionFailure('timeout'). The worker pool's own limit (through the AbortSignal) still applies.
   */
  timeLimitMs?: number;
  /**
   * Engine.maxConcurrentRuns; default the cores. ffmpeg spreads one conversion over every core
   * itself, so more runs than cores only share them, each taking that much longer and holding its
   * memory meanwhile; the daemon's default workers never reach this, `conv -j 4` on two cores would.
   */
  maxConcurrentRuns?: number;
}

interface Toolchain {
  ffmpeg: string;
  ffprobe: string;
  version: string;
  encoders: Set<string>;
  /** How MPEG-TS is read (probe.ts mpegTsReader): .ts is offered unless neither way works. */
  mpegts: MpegTsReader | null;
}

/**
 * Messages of ffmpeg's demuxers when the input's data runs out or is damaged mid-stream. ffmpeg
 * still exits 0 in that case, with an output that is shorter than the input: treated as a failed
 * conversion rather than a silently partial result. (Decoder hiccups alone are tolerated.)
 */
const DAMAGED_INPUT = /partial file|corrupt input packet|^file:.*: (Invalid data found when processing input|End of file)$/;
/** ffmpeg errors that say the input, not the engine, is at fault. */
/** ffmpeg's words for a stream whose encoding it has no decoder for (a WAV of 36-bit samples: codec none). */
const NO_DECODER = /Decoder \(codec ([^)]*)\) not found/;
const INPUT_ERROR = /Invalid data found|moov atom not found|could not find codec parameters|partial file|does not contain any stream|matches no streams|not on whitelist|Error while decoding|Invalid NAL|corrupt/i;

/** Audio and video with the ffmpeg binary (driven directly: own process group, -progress pipe). */
export function createMediaEngine(settings: MediaEngineOptions = {}): Engine {
  let tools: Toolchain | undefined;

  return {
    name: 'media',
    maxConcurrentRuns: settings.maxConcurrentRuns ?? availableParallelism(),
    async probe(): Promise<EngineStatus> {
      tools = undefined;
      const ffmpeg = await findBinary('ffmpeg', settings);
      const ffprobe = await findBinary('ffprobe', settings);
      if (!ffmpeg || !ffprobe) {
        return {
          name: 'media', available: false, binary: ffmpeg?.path ?? ffprobe?.path,
          detail: `${!ffmpeg ? 'ffmpeg' : 'ffprobe'} not found (set FFMPEG_PATH/FFPROBE_PATH, put it on PATH, or install @ffmpeg-installer/ffmpeg and @ffprobe-installer/ffprobe)`,
        };
      }
      try {
        const version = await firstLine(ffmpeg.path, ['-hide_banner', '-version']);
        await firstLine(ffprobe.path, ['-hide_banner', '-version']);
        // Independent questions to two binaries: asked at once (this is the daemon's first start).
        const [encoders, mpegts] = await Promise.all([listEncoders(ffmpeg.path), mpegTsReader(ffmpeg.path, ffprobe.path)]);
        tools = { ffmpeg: ffmpeg.path, ffprobe: ffprobe.path, version: version.replace(/^ffmpeg version\s+/, '').split(' ')[0] ?? version, encoders, mpegts };
        const missing = Object.entries(REQUIRED_ENCODERS)
          .filter(([, needed]) => needed.some((encoder) => !encoders.has(encoder)))
          .map(([target]) => target);
        return {
          name: 'media', available: true, binary: `${ffmpeg.path} (${ffmpeg.origin})`, version: tools.version,
          detail: [
            `ffprobe ${ffprobe.path} (${ffprobe.origin})`,
            encoders.has('libx265') ? 'h265 available' : 'no libx265: h265 variants not offered',
            missing.length > 0 ? `targets without an encoder: ${missing.join(', ')}` : 'all targets available',
            mpegts === 'ffprobe' ? 'MPEG-TS read directly'
              : mpegts === 'remux' ? 'MPEG-TS copied into Matroska before reading (this ffprobe cannot read it; Debian\'s ffmpeg package reads it directly)'
                : 'MPEG-TS (.ts, .mts, .m2ts) not offered: neither this ffprobe nor this ffmpeg reads it (set FFMPEG_PATH/FFPROBE_PATH to another build, e.g. Debian\'s ffmpeg package)',
          ].join('; '),
        };
      } catch (error) {
        return {
          name: 'media', available: false, binary: ffmpeg.path,
          detail: `ffmpeg does not run: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
    },
    pairs: () => (tools ? mediaPairs(tools.encoders, tools.mpegts) : []),
    formats: () => MEDIA_FORMATS,
    async convert(job: EngineJob): Promise<void> {
      if (!tools) throw new ConversionFailure('internal_error', 'The media engine was not probed or ffmpeg is unavailable.');
      await convertMedia(tools, job, settings.timeLimitMs);
    },
  };
}

function mediaPairs(encoders: Set<string>, mpegts: MpegTsReader | null): ConversionPair[] {
  const has = (target: keyof typeof REQUIRED_ENCODERS): boolean => REQUIRED_ENCODERS[target].every((e) => encoders.has(e));
  const h265 = encoders.has('libx265');
  const pairs: ConversionPair[] = [];
  const videoSources = VIDEO_SOURCES.filter((source) => source !== 'ts' || mpegts !== null);
  for (const source of [...AUDIO_SOURCES, ...videoSources]) {
    for (const target of AUDIO_TARGETS) {
      if (has(target)) pairs.push({ source, target, engine: 'media', kind: 'audio', options: audioOptions(target), variants: [] });
    }
  }
  for (const source of videoSources) {
    for (const target of VIDEO_TARGETS) {
      if (!has(target)) continue;
      pairs.push({ source, target, engine: 'media', kind: 'video', options: videoOptions(target), variants: videoVariants(target, h265) });
    }
    for (const target of FRAME_TARGETS) {
      if (has(target)) pairs.push({ source, target, engine: 'media', kind: 'video', options: frameOptions(), variants: [] });
    }
  }
  return pairs;
}

async function convertMedia(tools: Toolchain, job: EngineJob, timeLimitMs: number | undefined): Promise<void> {
  job.onProgress(0);
  if (job.source !== 'ts' || tools.mpegts !== 'remux') return convertFile(tools, job, timeLimitMs);
  // This ffprobe cannot read a transport stream: its streams are copied into Matroska first, in a
  // directory of this job's own beside the output (removed whatever happens), named as the input.
  const work = await mkdtemp(join(dirname(job.outputPath), '.remux-'));
  try {
    const copy = join(work, `${basename(job.inputPath).replace(/\.[^.]*$/, '')}.mkv`);
    await remuxTransportStream(tools.ffmpeg, job.inputPath, copy, { signal: job.signal, timeoutMs: timeLimitMs, niceness: ENGINE_NICENESS });
    await convertFile(tools, { ...job, inputPath: copy }, timeLimitMs);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function convertFile(tools: Toolchain, job: EngineJob, timeLimitMs: number | undefined): Promise<void> {
  const probe = await probeMedia(tools.ffprobe, job.inputPath, job.signal);
  if (job.variant === 'h265' && !tools.encoders.has('libx265')) {
    throw new ConversionFailure('conversion_failed', 'This ffmpeg has no H.265 encoder (libx265).');
  }
  const plan = buildPlan(job, probe);
  // ffmpeg stops writing just past -fs (an output option: before the output, the last argument).
  if (job.maxOutputBytes !== undefined) plan.args.splice(plan.args.length - 1, 0, '-fs', String(job.maxOutputBytes + 1));
  const progress = new ProgressReader(plan.expectedSeconds, job.onProgress);
  let damaged: string | undefined;
  const result = await runProcess(tools.ffmpeg, plan.args, {
    signal: job.signal,
    timeoutMs: timeLimitMs,
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    onStdoutLine: (line) => progress.line(line),
    onStderrLine: (line) => {
      if (damaged === undefined && DAMAGED_INPUT.test(line)) damaged = line;
    },
  });
  const stderr = lastLines(result.stderrTail.split(`file:${job.inputPath}`).join('input').split(`file:${job.outputPath}`).join('output'));
  if (result.code !== 0) {
    const codec = NO_DECODER.exec(result.stderrTail)?.[1];
    if (codec !== undefined) {
      throw new ConversionFailure('input_invalid', `The input's audio or video is in an encoding this ffmpeg cannot decode${codec === 'none' ? ' (one it does not know)' : ` (${codec})`}.`);
    }
    const code = INPUT_ERROR.test(result.stderrTail) ? 'input_invalid' : 'conversion_failed';
    throw new ConversionFailure(code, `ffmpeg failed (exit ${result.code ?? result.signal}): ${stderr || 'no message'}`);
  }
  if (damaged !== undefined) {
    throw new ConversionFailure('input_invalid', `The input is damaged or truncated: ${stderr}`);
  }
  const size = await stat(job.outputPath).then((s) => s.size, () => 0);
  if (size === 0) throw new ConversionFailure('conversion_failed', `ffmpeg wrote no output${stderr ? `: ${stderr}` : ''}.`);
  checkOutputSize(size, job.maxOutputBytes);
  job.onProgress(100);
}
