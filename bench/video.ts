/**
 * video: A 10-second 720p H.264/AAC test video -> mp4 through the daemon (multipart submit, wait,
 * download; the daemon in its own process) against running the very same ffmpeg command directly:
 * the arguments come from the engine's own `buildPlan`, fed with the options and variant the daemon
 * reports it applied, and the binary is the one `findBinary` gives the engine. Both outputs are
 * checked with ffprobe (H.264 + AAC, 1280x720, 10 s).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildPlan } from '../src/engines/media/args.ts';
import { findBinary } from '../src/engines/media/binaries.ts';
import { probeMedia } from '../src/engines/media/probe.ts';
import { runProcess } from '../src/engines/subprocess.ts';
import type { ConversionOptions } from '../src/model/conversion.ts';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody, send } from './lib/http.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const SECONDS = 10;
const WIDTH = 1280;
const HEIGHT = 720;
/**
 * Alternating rounds (daemon, direct, daemon, direct, ...): neither side always runs on a cold
 * cache. Each side's figure is its best round: on a shared machine other work only ever adds
 * time, so the minimum is the figure least disturbed by it (medians are printed too).
 */
const ROUNDS = 3;
const TARGET_RATIO = 1.1;

interface Conversion {
  id: string;
  status: string;
  variant: string | null;
  options: ConversionOptions;
  error: { code: string; message: string } | null;
}

/**
 * CPU time (user + system, ms) of the children `pid` has waited for: ffmpeg and ffprobe once they
 * are reaped. Unlike wall time it does not swing with whatever else the machine runs.
 */
async function reapedChildrenCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // cutime and cstime, in clock ticks of 10 ms (USER_HZ 100, as in lib/cpu.ts).
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

async function run(binary: string, args: string[]): Promise<void> {
  const result = await runProcess(binary, args);
  if (result.code !== 0) throw new Error(`${binary} ${args.join(' ')} exited ${result.code}: ${result.stderrTail}`);
}

async function makeInput(ffmpeg: string, path: string): Promise<void> {
  await run(ffmpeg, [
    '-hide_banner', '-v', 'error', '-nostdin', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=${WIDTH}x${HEIGHT}:rate=30:duration=${SECONDS}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${SECONDS}`,
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k', '-shortest', path,
  ]);
}

/** What ffprobe finds, or a problem with it. */
async function check(ffprobe: string, path: string): Promise<string | null> {
  const lines: string[] = [];
  const result = await runProcess(ffprobe, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', path], { onStdoutLine: (l) => lines.push(l) });
  if (result.code !== 0) return `ffprobe failed: ${result.stderrTail}`;
  const probed = JSON.parse(lines.join('\n')) as { format: { duration?: string }; streams: { codec_type: string; codec_name: string; width?: number; height?: number }[] };
  const video = probed.streams.find((s) => s.codec_type === 'video');
  const audio = probed.streams.find((s) => s.codec_type === 'audio');
  const duration = Number(probed.format.duration);
  if (video?.codec_name !== 'h264' || audio?.codec_name !== 'aac' || video.width !== WIDTH || video.height !== HEIGHT || Math.abs(duration - SECONDS) > SECONDS * 0.05) {
    return `${video?.codec_name}/${audio?.codec_name} ${video?.width}x${video?.height} ${duration} s`;
  }
  return null;
}

/** Submit, wait for the end (repeating `wait=30`), download: the whole round trip a client sees. */
async function throughDaemon(daemon: BenchDaemon, input: Buffer): Promise<{ ms: number; conversion: Conversion; output: Buffer }> {
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const started = performance.now();
  const { contentType, body } = multipartBody({ target: 'mp4', wait: '30' }, 'testsrc.mp4', 'video/mp4', input);
  const created = await send(daemon, 'POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  let conversion = json<Conversion>(created);
  if (created.status !== 200 && created.status !== 202) throw new Error(`submit answered ${created.status}: ${created.body.toString()}`);
  while (conversion.status !== 'succeeded') {
    if (conversion.status === 'failed' || conversion.status === 'cancelled') throw new Error(`conversion ${conversion.status}: ${JSON.stringify(conversion.error)}`);
    conversion = json<Conversion>(await send(daemon, 'GET', `/v1/conversions/${conversion.id}?wait=30`, auth));
  }
  const download = await send(daemon, 'GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`download answered ${download.status}`);
  return { ms: performance.now() - started, conversion, output: download.body };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export async function benchVideo(): Promise<BenchResult> {
  const ffmpeg = await findBinary('ffmpeg');
  const ffprobe = await findBinary('ffprobe');
  if (!ffmpeg || !ffprobe) throw new Error('ffmpeg/ffprobe not found (FFMPEG_PATH, PATH or the npm packages)');
  const dir = await tempDir('video');
  const notes: string[] = [];
  try {
    const inputPath = join(dir, 'input.mp4');
    await makeInput(ffmpeg.path, inputPath);
    const input = await readFile(inputPath);
    const daemon = await startBenchDaemon({ dataDir: join(dir, 'data') });
    const daemonMs: number[] = [];
    const directMs: number[] = [];
    const daemonMediaCpu: number[] = [];
    const daemonOwnCpu: number[] = [];
    const directCpu: number[] = [];
    let args: string[] = [];
    let identical = true;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const [mediaBefore, ownBefore] = [await reapedChildrenCpuMs(daemon.pid), await cpuTimeMs(daemon.pid)];
        const viaDaemon = await throughDaemon(daemon, input);
        daemonMs.push(viaDaemon.ms);
        daemonMediaCpu.push((await reapedChildrenCpuMs(daemon.pid)) - mediaBefore);
        daemonOwnCpu.push((await cpuTimeMs(daemon.pid)) - ownBefore);
        const daemonOutput = join(dir, `daemon-${round}.mp4`);
        await writeFile(daemonOutput, viaDaemon.output);
        const daemonProblem = await check(ffprobe.path, daemonOutput);
        if (daemonProblem) notes.push(`INVALID: convd output ${daemonProblem}`);

        // The command the engine ran, for the options and variant the daemon says it applied.
        const outputPath = join(dir, `direct-${round}.mp4`);
        const probe = await probeMedia(ffprobe.path, inputPath, new AbortController().signal);
        const { conversion } = viaDaemon;
        args = buildPlan({ inputPath, outputPath, target: 'mp4', variant: conversion.variant, options: conversion.options }, probe).args;
        const cpuBefore = await reapedChildrenCpuMs(process.pid);
        const started = performance.now();
        await run(ffmpeg.path, args);
        directMs.push(performance.now() - started);
        directCpu.push((await reapedChildrenCpuMs(process.pid)) - cpuBefore);
        const directProblem = await check(ffprobe.path, outputPath);
        if (directProblem) notes.push(`INVALID: direct output ${directProblem}`);
        if (!(await readFile(outputPath)).equals(viaDaemon.output)) identical = false;
      }
    } finally {
      await daemon.stop();
    }
    const convd = Math.min(...daemonMs);
    const direct = Math.min(...directMs);
    const cpuRatio = (median(daemonMediaCpu) + median(daemonOwnCpu)) / median(directCpu);
    const ratio = convd / direct;
    const seconds = (values: number[]) => values.map((ms) => (ms / 1000).toFixed(2)).join(', ');
    return {
      title: `${SECONDS} s ${HEIGHT}p H.264/AAC -> mp4`,
      figures: `convd ${(convd / 1000).toFixed(2)} s vs ffmpeg ${(direct / 1000).toFixed(2)} s`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${TARGET_RATIO}x`,
      pass: ratio <= TARGET_RATIO && notes.length === 0,
      notes: [
        `best of ${ROUNDS} alternating rounds; convd: submit (multipart, ${(input.length / 1024 / 1024).toFixed(1)} MiB) + wait + download = ${seconds(daemonMs)} s; ffmpeg alone: ${seconds(directMs)} s (medians ${(median(daemonMs) / 1000).toFixed(2)} vs ${(median(directMs) / 1000).toFixed(2)} s)`,
        `CPU time (medians): convd's ffprobe + ffmpeg ${(median(daemonMediaCpu) / 1000).toFixed(2)} s + convd itself ${(median(daemonOwnCpu) / 1000).toFixed(2)} s vs ffmpeg alone ${(median(directCpu) / 1000).toFixed(2)} s = ${cpuRatio.toFixed(2)}x`,
        `ffmpeg ${ffmpeg.path} (${ffmpeg.origin}); outputs ${identical ? 'byte-identical' : 'not byte-identical'}`,
        `command: ffmpeg ${args.join(' ').replaceAll(dir, '$DIR')}`,
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
