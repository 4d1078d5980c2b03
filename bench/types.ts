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
