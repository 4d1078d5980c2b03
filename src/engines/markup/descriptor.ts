import { availableParallelism } from 'node:os';
import { defineEngine } from '../descriptor.ts';

/** pandoc, a process of its own (sandboxed, heap-limited). */
export const markup = defineEngine({
  name: 'markup',
  limits: { timeLimitMs: 120_000, listedAt: 7 },
  loader: () => ({ maxConcurrentRuns: availableParallelism(), load: async () => (await import('./markup-engine.ts')).createMarkupEngine() }),
  binaries: [{ name: 'pandoc', env: 'CONVD_PANDOC_PATH' }],
});
