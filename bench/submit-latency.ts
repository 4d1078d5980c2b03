/**
 * submit-latency: Submission latency with 100,000 conversions of the submitting account in the
 * store, against the same submissions on an empty store. The history is written before the daemon
 * starts, through LowdbStore itself; the submissions are small multipart uploads, one at a time,
 * timed from the first byte sent to the last byte of the 202 received.
 */
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { multipartBody, send } from './lib/http.ts';
import { tinyPng } from './lib/images.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { seedAccounts, seedHistory } from './lib/seed.ts';
import type { BenchResult } from './types.ts';

const HISTORY = 100_000;
export const SUBMISSIONS = 500;
export const WARMUP = 30;

export interface SubmissionTimes {
  p50: number;
  p99: number;
  max: number;
}

interface Latencies extends SubmissionTimes {
  startMs: number;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * `SUBMISSIONS` small multipart uploads (32x32 PNG -> webp, wait=0) with the daemon's key, one at
 * a time after `WARMUP` untimed ones, each timed from the first byte sent to the last byte of the
 * answer received. Bench postgres-submit times the daemon on PostgreSQL the same way.
 */
export async function timeSubmissions(daemon: BenchDaemon, count = SUBMISSIONS, warmup = WARMUP): Promise<SubmissionTimes> {
  const png = await tinyPng();
  const times: number[] = [];
  for (let i = 0; i < warmup + count; i++) {
    const { contentType, body } = multipartBody({ target: 'webp' }, `upload-${i}.png`, 'image/png', png);
    const started = performance.now();
    const answer = await send(daemon, 'POST', '/v1/conversions', { authorization: `Bearer ${daemon.apiKey}`, 'content-type': contentType }, body);
    const elapsed = performance.now() - started;
    if (answer.status !== 202 && answer.status !== 200) throw new Error(`submission ${i} answered ${answer.status}: ${answer.body}`);
    if (i >= warmup) times.push(elapsed);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1]! };
}

async function measure(history: number): Promise<Latencies> {
  const dataDir = await tempDir('submit');
  try {
    const [account] = await seedAccounts(dataDir, 1, 'unmetered');
    if (history > 0) await seedHistory(dataDir, account!.accountId, history);
    const daemon = await startBenchDaemon({ dataDir, apiKey: account!.apiKey });
    try {
      return { ...(await timeSubmissions(daemon)), startMs: daemon.startMs };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
  }
}

/**
 * The floor under any durable acknowledgement on this disk: a small file written, fsynced,
 * renamed into place and its directory fsynced, as many times in a row as there are submissions.
 */
async function durableWriteFloor(): Promise<{ p50: number; p99: number }> {
  const dir = await tempDir('fsync');
  try {
    const times: number[] = [];
    for (let i = 0; i < SUBMISSIONS; i++) {
      const started = performance.now();
      const file = await open(join(dir, 'record.json.tmp'), 'w');
      await file.writeFile(JSON.stringify({ i, padding: 'x'.repeat(800) }));
      await file.sync();
      await file.close();
      await rename(join(dir, 'record.json.tmp'), join(dir, 'record.json'));
      const directory = await open(dir, 'r');
      await directory.sync();
      await directory.close();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    await removeDir(dir);
  }
}

export async function benchSubmitLatency(): Promise<BenchResult> {
  const floor = await durableWriteFloor();
  const empty = await measure(0);
  const full = await measure(HISTORY);
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  return {
    title: 'submission latency',
    figures: `with ${HISTORY.toLocaleString('en')} stored: p50 ${ms(full.p50)} p99 ${ms(full.p99)} vs empty store: p50 ${ms(empty.p50)} p99 ${ms(empty.p99)}`,
    ratio: `p99 ${ms(full.p99)}`,
    target: 'p99 < 25 ms',
    pass: full.p99 < 25,
    notes: [
      `${SUBMISSIONS} sequential multipart submissions (32x32 PNG, wait=0) after ${WARMUP} warm-up; max ${ms(full.max)} (empty store ${ms(empty.max)})`,
      `daemon start: ${ms(full.startMs)} with the history vs ${ms(empty.startMs)} empty`,
      `this disk's floor for one durable write (write, fsync, rename, fsync dir), ${SUBMISSIONS} in a row: p50 ${ms(floor.p50)} p99 ${ms(floor.p99)}`,
    ],
  };
}
