import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionOptions } from '../../model/conversion.ts';
import { AUDIO_TARGETS, FRAME_TARGETS, VIDEO_TARGETS, type AudioTarget, type FrameTarget, type VideoTarget } from './formats.ts';
import type { MediaProbe } from './probe.ts';
import { inputGuardArgs } from './probe.ts';

export interface MediaJob {
  inputPath: string;
  outputPath: string;
  target: string;
  variant: string | null;
  options: ConversionOptions;
  source?: string;
}

/** The ffmpeg command for one job, and how long its output should be (for progress and checks). */
export interface FfmpegPlan {
  args: string[];
  expectedSeconds: number | null;
}

const AUDIO_CODEC: Record<AudioTarget, { muxer: string; codec: string[] }> = {
  mp3: { muxer: 'mp3', codec: ['-c:a', 'libmp3lame'] },
  wav: { muxer: 'wav', codec: ['-c:a', 'pcm_s16le'] },
  ogg: { muxer: 'ogg', codec: ['-c:a', 'libvorbis'] },
  flac: { muxer: 'flac', codec: ['-c:a', 'flac'] },
  aac: { muxer: 'adts', codec: ['-c:a', 'aac'] },
  m4a: { muxer: 'ipod', codec: ['-c:a', 'aac', '-movflags', '+faststart'] },
  opus: { muxer: 'opus', codec: ['-c:a', 'libopus'] },
};

const VIDEO_MUXER: Record<Exclude<VideoTarget, 'gif'>, string> = { mp4: 'mp4', webm: 'webm', mov: 'mov', mkv: 'matroska' };

/** Encoders each target needs; a target whose encoder the binary lacks is not offered. */
export const REQUIRED_ENCODERS: Record<AudioTarget | VideoTarget | FrameTarget, string[]> = {
  mp3: ['libmp3lame'], wav: ['pcm_s16le'], ogg: ['libvorbis'], flac: ['flac'], aac: ['aac'], m4a: ['aac'], opus: ['libopus'],
  mp4: ['libx264', 'aac'], mov: ['libx264', 'aac'], mkv: ['libx264', 'aac'], webm: ['libvpx-vp9', 'libopus'],
  gif: ['gif'], jpg: ['mjpeg'], png: ['png'],
};

/**
 * libvorbis refuses bitrates its tuning has no mode for (160k at 8 kHz mono fails to open), so the
 * bitrate is mapped to the quality level whose nominal rate it is for 44.1 kHz stereo; quality
 * mode works at every sample rate and channel count.
 */
const VORBIS_QUALITY: Record<string, string> = {
  '64k': '0', '96k': '2', '128k': '4', '160k': '5', '192k': '6', '256k': '8', '320k': '9',
};

/** x264's preset names mapped onto libvpx-vp9's deadline and cpu-used, fastest to slowest. */
const VP9_SPEED: Record<string, [string, string]> = {
  ultrafast: ['realtime', '8'], superfast: ['realtime', '7'], veryfast: ['realtime', '6'],
  faster: ['good', '5'], fast: ['good', '4'], medium: ['good', '3'], slow: ['good', '2'], slower: ['good', '1'], veryslow: ['good', '0'],
};

const COMMON = ['-hide_banner', '-nostdin', '-v', 'error', '-y', '-progress', 'pipe:1', '-nostats'];

function isOneOf<T extends string>(list: readonly T[], value: string): value is T {
  return (list as readonly string[]).includes(value);
}

function num(options: ConversionOptions, name: string): number | undefined {
  const value = options[name];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function str(options: ConversionOptions, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/** Seconds with millisecond precision, as ffmpeg reads them. */
function seconds(value: number): string {
  return value.toFixed(3);
}

interface Trim {
  inputArgs: string[];
  outputArgs: string[];
  expectedSeconds: number | null;
}

function trim(options: ConversionOptions, probe: MediaProbe): Trim {
  const start = num(options, 'trim_start');
  const end = num(options, 'trim_end');
  if (start !== undefined && end !== undefined && end <= start) {
    throw new ConversionFailure('input_invalid', `trim_end (${end}) must be after trim_start (${start}).`);
  }
  const duration = probe.duration;
  if (duration !== null && start !== undefined && start >= duration) {
    throw new ConversionFailure('input_invalid', `trim_start (${start} s) is at or past the end of the input (${duration.toFixed(2)} s).`);
  }
  const from = start ?? 0;
  const to = end !== undefined && duration !== null ? Math.min(end, duration) : end ?? duration;
  return {
    // Seeking before -i is fast and, since ffmpeg 2.1, frame-accurate when transcoding.
    inputArgs: start !== undefined && start > 0 ? ['-ss', seconds(start)] : [],
    outputArgs: end !== undefined ? ['-t', seconds(end - from)] : [],
    expectedSeconds: to === null ? null : Math.max(0, to - from),
  };
}

function input(path: string): string[] {
  return [...inputGuardArgs(), '-i', `file:${path}`];
}

/** Fit inside width x height keeping the aspect ratio; always even sides, which 4:2:0 encoders need. */
function sizeFilters(options: ConversionOptions): string[] {
  const width = num(options, 'width');
  const height = num(options, 'height');
  const filters: string[] = [];
  if (width !== undefined && height !== undefined) {
    filters.push(`scale=w=${Math.round(width)}:h=${Math.round(height)}:force_original_aspect_ratio=decrease`);
  } else if (width !== undefined) {
    filters.push(`scale=w=${Math.round(width)}:h=-2`);
  } else if (height !== undefined) {
    filters.push(`scale=w=-2:h=${Math.round(height)}`);
  }
  return filters;
}

const EVEN = 'scale=w=trunc(iw/2)*2:h=trunc(ih/2)*2';

export function buildPlan(job: MediaJob, probe: MediaProbe): FfmpegPlan {
  const { target } = job;
  if (isOneOf(AUDIO_TARGETS, target)) return audioPlan(job, target, probe);
  if (isOneOf(VIDEO_TARGETS, target)) return target === 'gif' ? gifPlan(job, probe) : videoPlan(job, target, probe);
  if (isOneOf(FRAME_TARGETS, target)) return framePlan(job, target, probe);
  throw new ConversionFailure('conversion_failed', `The media engine has no target ${target}.`);
}

function audioPlan(job: MediaJob, target: AudioTarget, probe: MediaProbe): FfmpegPlan {
  if (probe.audioStream === null) throw new ConversionFailure('input_invalid', 'The input has no audio stream.');
  const { options } = job;
  const cut = trim(options, probe);
  const spec = AUDIO_CODEC[target];
  const args = [...COMMON, ...cut.inputArgs, ...input(job.inputPath), '-map', `0:${probe.audioStream}`, '-vn', '-sn', '-dn', ...spec.codec];
  const bitrate = str(options, 'bitrate');
  if (bitrate !== undefined && target === 'ogg') args.push('-q:a', VORBIS_QUALITY[bitrate] ?? '5');
  else if (bitrate !== undefined && target !== 'wav' && target !== 'flac') args.push('-b:a', bitrate);
  const rate = str(options, 'sample_rate');
  if (rate !== undefined) args.push('-ar', rate);
  const channels = str(options, 'channels');
  if (channels !== undefined) args.push('-ac', channels);
  args.push(...cut.outputArgs, '-f', spec.muxer, `file:${job.outputPath}`);
  return { args, expectedSeconds: cut.expectedSeconds };
}

function requireVideo(probe: MediaProbe): number {
  if (probe.videoStream === null) throw new ConversionFailure('input_invalid', 'The input has no video stream.');
  return probe.videoStream;
}

function videoPlan(job: MediaJob, target: Exclude<VideoTarget, 'gif'>, probe: MediaProbe): FfmpegPlan {
  const videoStream = requireVideo(probe);
  const { options } = job;
  const cut = trim(options, probe);
  const filters: string[] = [];
  const fps = num(options, 'fps');
  if (fps !== undefined) filters.push(`fps=${fps}`);
  filters.push(...sizeFilters(options), EVEN, 'format=yuv420p');
  const args = [...COMMON, ...cut.inputArgs, ...input(job.inputPath), '-map', `0:${videoStream}`];
  if (probe.audioStream !== null) args.push('-map', `0:${probe.audioStream}`);
  args.push('-sn', '-dn', '-vf', filters.join(','));
  const preset = str(options, 'preset') ?? 'medium';
  const crf = String(num(options, 'crf') ?? (target === 'webm' ? 32 : 23));
  if (target === 'webm') {
    const [deadline, cpuUsed] = VP9_SPEED[preset] ?? VP9_SPEED.medium!;
    args.push('-c:v', 'libvpx-vp9', '-crf', crf, '-b:v', '0', '-deadline', deadline, '-cpu-used', cpuUsed, '-row-mt', '1');
    args.push('-c:a', 'libopus', '-b:a', '128k');
  } else {
    if (job.variant === 'h265') {
      args.push('-c:v', 'libx265', '-preset', preset, '-crf', crf, '-x265-params', 'log-level=error');
      // Apple players only open HEVC in MP4/MOV under the hvc1 tag.
      if (target !== 'mkv') args.push('-tag:v', 'hvc1');
    } else {
      args.push('-c:v', 'libx264', '-preset', preset, '-crf', crf);
    }
    args.push('-c:a', 'aac', '-b:a', '160k');
    if (target !== 'mkv') args.push('-movflags', '+faststart');
  }
  args.push(...cut.outputArgs, '-f', VIDEO_MUXER[target], `file:${job.outputPath}`);
  return { args, expectedSeconds: cut.expectedSeconds };
}

function gifPlan(job: MediaJob, probe: MediaProbe): FfmpegPlan {
  const videoStream = requireVideo(probe);
  const { options } = job;
  const cut = trim(options, probe);
  const fps = num(options, 'fps') ?? 10;
  const width = Math.round(num(options, 'width') ?? 480);
  const base = `fps=${fps},scale=w='min(${width},iw)':h=-1:flags=${job.variant === 'fast' ? 'bilinear' : 'lanczos'}`;
  // One pass computes a palette for this clip and maps the frames onto it; `fast` uses the
  // encoder's fixed palette instead.
  const graph = job.variant === 'fast'
    ? base
    : `${base},split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=5`;
  const args = [
    ...COMMON, ...cut.inputArgs, ...input(job.inputPath), '-map', `0:${videoStream}`, '-an', '-sn', '-dn',
    '-vf', graph, ...cut.outputArgs, '-f', 'gif', `file:${job.outputPath}`,
  ];
  return { args, expectedSeconds: cut.expectedSeconds };
}

function framePlan(job: MediaJob, target: FrameTarget, probe: MediaProbe): FfmpegPlan {
  const videoStream = requireVideo(probe);
  const { options } = job;
  const duration = probe.duration;
  const requested = num(options, 'time');
  let at = requested ?? (duration !== null ? duration / 2 : 0);
  if (duration !== null && at >= duration) {
    if (requested !== undefined) {
      throw new ConversionFailure('input_invalid', `time (${requested} s) is at or past the end of the input (${duration.toFixed(2)} s).`);
    }
    at = 0;
  }
  const filters = sizeFilters(options);
  const args = [...COMMON];
  // Seeking a transport stream before opening it finds no frame with Debian's ffmpeg 5.1 (an empty
  // output): there the frames before `at` are decoded and dropped instead (short for a still).
  const seekInInput = job.source !== 'ts';
  if (at > 0 && seekInInput) args.push('-ss', seconds(at));
  args.push(...input(job.inputPath));
  if (at > 0 && !seekInInput) args.push('-ss', seconds(at));
  args.push('-map', `0:${videoStream}`, '-an', '-sn', '-dn', '-frames:v', '1');
  if (filters.length > 0) args.push('-vf', filters.join(','));
  args.push(...(target === 'jpg' ? ['-c:v', 'mjpeg', '-q:v', '2'] : ['-c:v', 'png']));
  // -update writes exactly the named file instead of treating it as a numbered-sequence pattern.
  args.push('-update', '1', '-f', 'image2', `file:${job.outputPath}`);
  return { args, expectedSeconds: null };
}
