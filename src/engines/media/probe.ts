import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import { INPUT_DEMUXERS } from './formats.ts';

/** What the engine needs to know of an input before converting it. */
export interface MediaProbe {
  /** Seconds, or null when the container does not say. */
  duration: number | null;
  /** Stream index of the first real video stream (cover art excluded), or null. */
  videoStream: number | null;
  audioStream: number | null;
  width: number | null;
  height: number | null;
  formatName: string;
}

interface FfprobeStream {
  index: number;
  codec_type?: string;
  width?: number;
  height?: number;
  duration?: string;
  disposition?: { attached_pic?: number };
}

interface FfprobeOutput {
  streams?: FfprobeStream[];
  format?: { duration?: string; format_name?: string };
}

/** Arguments that keep ffmpeg and ffprobe to plain local files read by the demuxers we accept. */
export function inputGuardArgs(): string[] {
  return ['-format_whitelist', INPUT_DEMUXERS.join(','), '-protocol_whitelist', 'file'];
}

const PROBE_TIME_LIMIT_MS = 30_000;

/**
 * Reads the container and streams with ffprobe. Anything ffprobe cannot open (not media, a format
 * we do not accept, a truncated header) is the input's fault: ConversionFailure('input_invalid').
 */
export async function probeMedia(ffprobe: string, inputPath: string, signal: AbortSignal): Promise<MediaProbe> {
  const lines: string[] = [];
  const result = await runProcess(
    ffprobe,
    [
      '-hide_banner', '-v', 'error', ...inputGuardArgs(),
      '-show_entries', 'format=duration,format_name:stream=index,codec_type,width,height,duration:stream_disposition=attached_pic',
      '-of', 'json', `file:${inputPath}`,
    ],
    // dieWithParent: a daemon killed -9 takes its time limit with it.
    { signal, timeoutMs: PROBE_TIME_LIMIT_MS, dieWithParent: true, onStdoutLine: (line) => lines.push(line) },
  );
  if (result.code !== 0) {
    throw new ConversionFailure('input_invalid', `The input is not a readable audio or video file: ${describeProbeError(result.stderrTail, inputPath)}`);
  }
  let parsed: FfprobeOutput;
  try {
    parsed = JSON.parse(lines.join('\n')) as FfprobeOutput;
  } catch {
    throw new ConversionFailure('conversion_failed', 'ffprobe printed output that is not JSON.');
  }
  const streams = parsed.streams ?? [];
  const video = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const audio = streams.find((s) => s.codec_type === 'audio');
  const duration = positive(parsed.format?.duration) ?? positive(video?.duration) ?? positive(audio?.duration);
  return {
    duration,
    videoStream: video?.index ?? null,
    audioStream: audio?.index ?? null,
    width: video?.width ?? null,
    height: video?.height ?? null,
    formatName: parsed.format?.format_name ?? 'unknown',
  };
}

function positive(text: string | undefined): number | null {
  const value = Number(text);
  return text !== undefined && Number.isFinite(value) && value > 0 ? value : null;
}

/** ffprobe's last lines without the scratch path, which means nothing to the user. */
function describeProbeError(stderr: string, inputPath: string): string {
  const text = lastLines(stderr, 2).split(`file:${inputPath}`).join('input').split(inputPath).join('input');
  return text || 'ffprobe could not read it';
}

/**
 * How this toolchain reads an MPEG transport stream: `ffprobe` where ffprobe reads it; `remux`
 * where ffprobe fails on it but ffmpeg copies its streams into Matroska, which ffprobe then reads
 * (the npm ffprobe, a 2023 static build, crashes with SIGSEGV on every transport stream, while the
 * npm ffmpeg reads them); null where neither works. Tried once, on a one-second stream with
 * video and sound that this ffmpeg writes with its built-in encoders: long enough to be probed as
 * a transport stream (a single frame is taken for a bare MPEG video stream, which the whitelist
 * refuses, and made Debian's ffprobe look as if it failed).
 */
export async function mpegTsReader(ffmpeg: string, ffprobe: string): Promise<MpegTsReader | null> {
  const dir = await mkdtemp(join(tmpdir(), 'convd-ts-probe-'));
  try {
    const file = join(dir, 'probe.ts');
    const made = await runProcess(ffmpeg, [
      '-hide_banner', '-v', 'error', '-nostdin',
      '-f', 'lavfi', '-i', 'testsrc=size=32x32:rate=10:duration=1', '-f', 'lavfi', '-i', 'sine=duration=1',
      '-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'mpegts', '-y', file,
    ], { timeoutMs: PROBE_TIME_LIMIT_MS });
    if (made.code !== 0) return null;
    if (await readsFormat(ffprobe, file, 'mpegts')) return 'ffprobe';
    const copy = join(dir, 'probe.mkv');
    await remuxTransportStream(ffmpeg, file, copy, { timeoutMs: PROBE_TIME_LIMIT_MS });
    return (await readsFormat(ffprobe, copy, 'matroska')) ? 'remux' : null;
  } catch {
    return null;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export type MpegTsReader = 'ffprobe' | 'remux';

async function readsFormat(ffprobe: string, file: string, format: string): Promise<boolean> {
  const lines: string[] = [];
  const read = await runProcess(ffprobe, ['-hide_banner', '-v', 'error', ...inputGuardArgs(), '-show_entries', 'format=format_name', '-of', 'json', `file:${file}`], {
    timeoutMs: PROBE_TIME_LIMIT_MS, onStdoutLine: (line) => lines.push(line),
  });
  if (read.code !== 0) return false;
  try {
    return ((JSON.parse(lines.join('\n')) as FfprobeOutput).format?.format_name ?? '').split(',').includes(format);
  } catch {
    return false;
  }
}

/**
 * Copies a transport stream's video and audio into Matroska (no re-encoding), read by the
 * transport stream demuxer only. Fails with input_invalid when ffmpeg cannot read it.
 */
export async function remuxTransportStream(
  ffmpeg: string, input: string, output: string, options: { signal?: AbortSignal; timeoutMs?: number; niceness?: number },
): Promise<void> {
  const result = await runProcess(ffmpeg, [
    '-hide_banner', '-v', 'error', '-nostdin', '-format_whitelist', 'mpegts', '-protocol_whitelist', 'file', '-f', 'mpegts', '-i', `file:${input}`,
    '-map', '0:v?', '-map', '0:a?', '-c', 'copy', '-f', 'matroska', '-y', `file:${output}`,
  ], { ...options, dieWithParent: true });
  if (result.code !== 0) {
    throw new ConversionFailure('input_invalid', `The input is not a readable MPEG transport stream: ${describeProbeError(result.stderrTail, input)}`);
  }
}
