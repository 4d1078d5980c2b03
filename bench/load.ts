/**
 * mixed-load: Load test: a bounded mix of submissions, polls, downloads and listings from a second
 * process (bench/lib/mixed-load-worker.ts) against the compiled daemon for 60 s (BENCH_LOAD_SECONDS
 * to shorten), at the highest rate the box holds: closed-loop clients, as many as keep both cores
 * busy. Passes with 0 errors: every answer as the interface says, every conversion succeeded and
 * its download decodes; the only refusals are 429s of the one client group whose plan (pro: 600
 * requests per minute) is exceeded on purpose, each with a code and a Retry-After, and never more
 * requests let through than the plan allows.
 */
import { startBenchDaemon } from './lib/daemon.ts';
import { DEFAULT_PLANS } from '../src/model/plan.ts';
import type { MixedPlan, MixedResult } from './lib/mixed-load-worker.ts';
import { runWorkerProcess } from './lib/load.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { seedAccounts } from './lib/seed.ts';
import { cpuTimeMs } from './lib/cpu.ts';
import type { BenchResult } from './types.ts';

const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 60);
/** Unmetered clients: two per account (the unmetered plan's 1000 requests/s per account is never the limit). */
const CLIENTS = 24;
/** Clients of one pro account, which exceed its 600 requests per minute: their 429s are demanded. */
const LIMITED_CLIENTS = 2;
const POLL_INTERVAL_MS = 20;

export async function benchLoad(): Promise<BenchResult> {
  const dataDir = await tempDir('load');
  try {
    const open = await seedAccounts(dataDir, CLIENTS / 2, 'unmetered');
    const [pro] = await seedAccounts(dataDir, 1, 'pro');
    const daemon = await startBenchDaemon({ dataDir, apiKey: open[0]!.apiKey });
    try {
      const clients = [
        ...Array.from({ length: CLIENTS }, (_, i) => ({ apiKey: open[i % open.length]!.apiKey, limited: false })),
        ...Array.from({ length: LIMITED_CLIENTS }, () => ({ apiKey: pro!.apiKey, limited: true })),
      ];
      const cpuBefore = await cpuTimeMs(daemon.pid);
      const result = await runWorkerProcess<MixedPlan, MixedResult>('mixed-load-worker.ts', { host: daemon.host, port: daemon.port, clients, durationMs: SECONDS * 1000, pollIntervalMs: POLL_INTERVAL_MS });
      const cpuMs = (await cpuTimeMs(daemon.pid)) - cpuBefore;
      const memory = await daemon.memory();

      const notes: string[] = [];
      const seconds = result.elapsedMs / 1000;
      const rate = result.requests / seconds;
      // What the pro plan lets through: a full bucket at the start, then its rate.
      const perMinute = DEFAULT_PLANS.pro.requests_per_minute;
      const allowed = perMinute + (perMinute / 60) * seconds;
      const passed = result.limited.answered - result.limited.refused;
      if (passed > allowed + 1) notes.push(`INVALID: the pro client got ${passed} requests through, more than its plan allows (${allowed.toFixed(0)})`);
      if (result.limited.refused > 0 && passed < 0.5 * (perMinute / 60) * seconds) notes.push(`INVALID: the pro client got only ${passed} requests through while being refused: the limiter refuses more than the plan says`);
      if (result.limited.withoutRetryAfter > 0) notes.push(`INVALID: ${result.limited.withoutRetryAfter} 429s without Retry-After`);
      if (result.conversions.downloaded !== result.conversions.submitted) notes.push(`INVALID: ${result.conversions.submitted} submitted, ${result.conversions.downloaded} downloaded and checked`);
      for (const sample of result.errorSamples) notes.push(`error: ${sample}`);

      const kinds = Object.entries(result.kinds).map(([kind, k]) => `${kind} ${k.count} (p50 ${k.p50.toFixed(1)} ms, p99 ${k.p99.toFixed(1)} ms)`).join('; ');
      return {
        title: 'load (mixed)',
        figures: `${rate.toFixed(0)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${(result.conversions.succeeded / seconds).toFixed(0)} conversions/s`,
        ratio: `${result.errors} errors`,
        target: '0 errors, 429 only as the plan demands',
        pass: result.errors === 0 && notes.length === 0,
        notes: [
          `${SECONDS} s, ${CLIENTS} unmetered + ${LIMITED_CLIENTS} pro closed-loop clients in a second process; polls every ${POLL_INTERVAL_MS} ms until the end state`,
          kinds,
          `conversions: ${result.conversions.submitted} submitted, ${result.conversions.succeeded} succeeded, ${result.conversions.downloaded} downloaded and decoded`,
          `pro client: ${result.limited.answered} answers, ${result.limited.refused} refused with 429 ${JSON.stringify(result.limited.codes)}, ${passed} let through of at most ${allowed.toFixed(0)} its plan allows`,
          `daemon CPU ${(cpuMs / seconds / 10).toFixed(0)}% of one core on average, ${((cpuMs * 1000) / result.requests).toFixed(0)} us per request; RSS ${(memory.rssKb / 1024).toFixed(0)} MiB, peak ${(memory.peakKb / 1024).toFixed(0)} MiB`,
          ...notes,
        ],
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
  }
}
