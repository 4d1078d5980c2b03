import type { Lane } from '../queue/job-source.ts';
import type { ConversionService } from './conversion-service.ts';
import { RunDirs } from './job-dir.ts';
import { ConversionRun } from './run/conversion-run.ts';
import { EngineGates } from './run/engine-gates.ts';
import type { RunnerLog } from './run/runner-log.ts';
import { RunTransitions } from './run/transitions.ts';

export type { RunnerLog } from './run/runner-log.ts';

/**
 * The worker pool's job handler: runs one queued conversion to its end (see ConversionRun).
 * `quickRuns`: the runs each engine that limits its own takes beyond its number for the workers'
 * quick lane (its gate keeps them for quick jobs).
 */
export function createRunner(service: ConversionService, log: RunnerLog = () => undefined, quickRuns = 0) {
  const dirs = new RunDirs(() => service.blobs.workDirFor('run'));
  const parts = { service, log, moves: new RunTransitions(service, log), gates: new EngineGates(quickRuns), dirs };
  /** `releaseSlot`: see JobHandler; called once the engine has ended, whichever way. */
  return function run(id: string, signal: AbortSignal, releaseSlot: () => void, lane: Lane = 'regular'): Promise<void> {
    return new ConversionRun(parts, id, signal, releaseSlot, lane).run();
  };
}
