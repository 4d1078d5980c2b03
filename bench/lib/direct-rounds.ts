/**
 * A baseline process that does one round of direct work per `round <k>` line and answers with
 * its time (bench/lib/pdf-all-pages-direct.ts, bench/lib/pdf-merge-direct.ts). It runs at the
 * engine host's priority (bench/lib/baseline-process.ts): a baseline at full priority beside a
 * niced engine host measures that policy, not the service (docs/benchmarks.md, pdf-pages).
 */
import { join } from 'node:path';
import { startBaseline } from './baseline-process.ts';
import { ROOT } from './daemon.ts';

export interface DirectRound {
  ms: number;
  cpuMs: number;
}

export interface DirectRounds {
  round(k: number): Promise<DirectRound>;
  stop(): Promise<void>;
}

/** Starts `bench/lib/<script>` with `plan` as JSON and waits for its `{"ready":true}`. */
export async function startDirectRounds(script: string, plan: object, what: string): Promise<DirectRounds> {
  const baseline = startBaseline(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', script), JSON.stringify(plan)], what);
  try {
    await baseline.next<{ ready: boolean }>();
  } catch (error) {
    await baseline.stop();
    throw error;
  }
  return {
    round: async (k) => {
      baseline.send(`round ${k}`);
      return baseline.next<DirectRound>();
    },
    stop: () => baseline.stop(),
  };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? 0;
};
