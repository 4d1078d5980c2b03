import { availableParallelism } from 'node:os';
import { defineEngine } from '../descriptor.ts';
import { OFFICE_SOURCES } from './formats.ts';
import { formulasDoctor, type FormulaSupport } from './formulas.ts';

/** The LibreOffice pool of the office engine. */
export interface OfficeSettings {
  instances: number;
  recycleAfter: number;
  memoryLimitMb: number;
  /** Start the instances with the daemon rather than with the first document. */
  warmAtStart: boolean;
  /**
   * A PDF export that stays on one page this long ends early with `timeout`, ms (0: only the time
   * limit). A page of LibreOffice's PDF export takes well under a second; the slowest measured
   * here, a page holding a 64-megapixel picture, took 4 s on two busy cores, so a slide of several
   * such pictures stays well inside the default.
   */
  stallMs: number;
}

/** LibreOffice, kept running in a pool of instances: office documents, and what reads like one. */
export const office = defineEngine<OfficeSettings, FormulaSupport>({
  name: 'office',
  defaults: () => ({ instances: availableParallelism(), recycleAfter: 200, memoryLimitMb: 2048, warmAtStart: false, stallMs: 30_000 }),
  settings: [
    { key: 'office_instances', field: 'instances', kind: { type: 'integer', min: 1, max: 64 }, arg: 'n', listedAt: 1, help: 'LibreOffice instances kept for office documents, one document each at a time (default: available cores)' },
    { key: 'office_recycle_after', field: 'recycleAfter', kind: { type: 'integer', min: 1 }, arg: 'n', listedAt: 2, help: 'a LibreOffice instance is replaced after this many conversions' },
    { key: 'office_memory_mb', field: 'memoryLimitMb', kind: { type: 'integer', min: 256, max: 1_048_576 }, arg: 'MiB', listedAt: 3, help: 'memory of one LibreOffice instance; past it its conversion fails memory_limit' },
    { key: 'office_stall_timeout', field: 'stallMs', kind: { type: 'duration', unit: 's' }, arg: 'duration', listedAt: 13, help: 'a PDF export by LibreOffice that stays on one page this long ends early with timeout, before the time limit (0: off)' },
    { key: 'office_warm', field: 'warmAtStart', kind: { type: 'boolean' }, listedAt: 15, help: 'start the LibreOffice instances with the daemon (default: with the first document)' },
  ],
  // One document per instance: a user's own machine keeps as many as it converts at once.
  inProcess: (own, workers) => ({ ...own, instances: workers }),
  probeAtStart: (own) => own.warmAtStart,
  limits: { timeLimitMs: 300_000, listedAt: 6 },
  loader: (settings, own) => ({
    // One document per LibreOffice instance: the runner waits for a free one before the time limit.
    maxConcurrentRuns: own?.instances ?? availableParallelism(),
    startsClock: true,
    // Each document is opened from a directory of the engine's own, under the user's name.
    namesItsInputOf: OFFICE_SOURCES,
    load: async () => (await import('./office-engine.ts')).createOfficeEngine({
      ...own, quickInstances: settings.quickRuns ?? 0, ...(settings.onLifecycle ? { onLifecycle: settings.onLifecycle } : {}),
    }),
  }),
  doctor: formulasDoctor,
  binaries: [{ name: 'soffice', env: 'CONVD_SOFFICE_PATH' }],
  variables: ['CONVD_OFFICE_PYTHON'],
});
