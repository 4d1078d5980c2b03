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
 * Whether this ffprobe reads an MPEG transport stream: some static builds (the npm package's
 * among them) crash on every one (SIGSEGV right after probing the format). Tried once, on a
 * stream of one frame this ffmpeg writes, so that .ts is offered only where it converts.
 */
export async function readsMpegTs(ffmpeg: string, ffprobe: string): Promise<boolean> {
  const dir = await mkdtemp(join(tmpdir(), 'convd-ts-probe-'));
  try {
    const file = join(dir, 'probe.ts');
    const made = await runProcess(ffmpeg, ['-hide_banner', '-v', 'error', '-nostdin', '-f', 'lavfi', '-i', 'color=size=16x16:duration=0.04', '-c:v', 'mpeg2video', '-f', 'mpegts', '-y', file], { timeoutMs: PROBE_TIME_LIMIT_MS });
    if (made.code !== 0) return false;
    const read = await runProcess(ffprobe, ['-hide_banner', '-v', 'error', ...inputGuardArgs(), '-show_entries', 'format=format_name', '-of', 'json', `file:${file}`], { timeoutMs: PROBE_TIME_LIMIT_MS });
    return read.code === 0;
  } catch {
    return false;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
