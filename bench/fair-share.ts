/**
 * fair-share: A fair share under hostile load: the p99 of submit-to-end of 100 small PNG -> WebP of
 * a fourth account (one at a time: an account with nothing running) while three free accounts keep
 * every engine kind busy with work that runs to its limit (test/helpers/hostile-load.ts), against
 * the same 100 on the idle daemon in the same run. Both with the daemon's defaults: the workers
 * (the cores) and their quick lane. Target: at most 3x.
 */
import { hostileWork, type Hostile } from '../test/helpers/hostile-load.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { photoPng } from './lib/images.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { seedAccounts } from './lib/seed.ts';
import { endedAs, submitAs } from './lib/submit.ts';
import type { BenchResult } from './types.ts';

const SMALL = 100;
const TARGET = 3;

/** Submit-to-end of each small conversion, one at a time, in ms. */
async function smallOnes(daemon: BenchDaemon, key: string, images: Buffer[]): Promise<number[]> {
  const times: number[] = [];
  for (const [index, image] of images.entries()) {
    const began = performance.now();
    const sent = await submitAs(daemon, key, `small-${index}.png`, image, 'webp', 30);
    if (!sent.conversion) throw new Error(`small conversion refused: ${sent.status} ${sent.body}`);
    const view = sent.conversion.status === 'succeeded' ? sent.conversion : await endedAs(daemon, key, sent.conversion.id);
    if (view.status !== 'succeeded') throw new Error(`small conversion ${view.id} ${view.status}: ${JSON.stringify(view.error)}`);
    times.push(performance.now() - began);
  }
  return times;
}

const percentile = (times: number[], share: number) => [...times].sort((a, b) => a - b)[Math.ceil(times.length * share) - 1]!;

/** Keeps two conversions of the account running (the free plan's two), the kinds in turn, until stopped. */
async function saturate(daemon: BenchDaemon, key: string, work: Hostile[], offset: number, ends: string[], stop: () => boolean): Promise<void> {
  let turn = offset;
  await Promise.all([0, 1].map(async () => {
    while (!stop()) {
      const { upload, target } = work[turn++ % work.length]!;
      const sent = await submitAs(daemon, key, upload.name, upload.data, target, 0);
      if (!sent.conversion) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      const view = await endedAs(daemon, key, sent.conversion.id);
      ends.push(`${upload.name}: ${view.error?.code ?? view.status}`);
    }
  }));
}

export async function benchFairShare(): Promise<BenchResult> {
  const dataDir = await tempDir('fair');
  const filesDir = await tempDir('fair-files');
  try {
    // The fourth account's plan allows its 210 submissions within the window and the minute's requests.
    const [victim] = await seedAccounts(dataDir, 1, 'standard');
    const attackers = await seedAccounts(dataDir, 3, 'free');
    const work = await hostileWork(filesDir);
    const images = await Promise.all(Array.from({ length: SMALL }, (_, i) => photoPng(320, 240, i)));
    const daemon = await startBenchDaemon({ dataDir, apiKey: victim!.apiKey, args: ['--log-level', 'warn'] });
    try {
      // Warm-up (engine hosts, the request path), then the idle baseline, then under load.
      await smallOnes(daemon, victim!.apiKey, images.slice(0, 10));
      const idle = await smallOnes(daemon, victim!.apiKey, images);
      let stopped = false;
      const ends: string[] = [];
      const attacks = attackers.map((attacker, i) => saturate(daemon, attacker.apiKey, work, i * 2, ends, () => stopped));
      let loaded: number[];
      try {
        await new Promise((resolve) => setTimeout(resolve, 6000));
        loaded = await smallOnes(daemon, victim!.apiKey, images);
      } finally {
        stopped = true;
        await Promise.all(attacks);
      }
      const idleP99 = percentile(idle, 0.99);
      const loadedP99 = percentile(loaded, 0.99);
      const timedOut = ends.filter((end) => end.endsWith('timeout')).length;
      const notes = [
        `three free accounts, two conversions each at all times: ${work.map((w) => `${w.upload.name} -> ${w.target}`).join(', ')}; ${ends.length} ended, ${timedOut} with timeout`,
        `idle: p50 ${percentile(idle, 0.5).toFixed(0)} ms; under load: p50 ${percentile(loaded, 0.5).toFixed(0)} ms, max ${Math.max(...loaded).toFixed(0)} ms`,
      ];
      if (timedOut === 0) notes.push('INVALID: no hostile conversion ran to its limit');
      return {
        title: 'small conversions of a fourth account under hostile load',
        figures: `p99 submit-to-end ${loadedP99.toFixed(0)} ms under load vs ${idleP99.toFixed(0)} ms idle`,
        ratio: `${(loadedP99 / idleP99).toFixed(2)}x`,
        target: `<= ${TARGET}x`,
        pass: loadedP99 / idleP99 <= TARGET && notes.every((note) => !note.startsWith('INVALID')),
        notes,
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
    await removeDir(filesDir);
  }
}
