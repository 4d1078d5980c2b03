/** What every bench hands back to bench/run.ts (which names it: bench/catalog.ts). */
export interface BenchResult {
  title: string;
  /** The figure and its baseline, e.g. `convd 8123 req/s vs node:http 11020 req/s`. */
  figures: string;
  /** e.g. `0.74x`. */
  ratio: string;
  target: string;
  pass: boolean;
  /** Anything that makes the figure invalid or needs a second look. */
  notes: string[];
}

/**
 * What the service may spend of its own CPU per conversion around the engine (the daemon's work:
 * the upload, the store, the hand-offs, the download), printed by the benches of single
 * conversions beside their ratio.
 */
export const SERVICE_CPU_TARGET_MS = 3;
