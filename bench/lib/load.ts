/** Runs a load generator (a script under bench/lib/) as a separate process and returns the JSON it prints. */
import { join } from 'node:path';
import type { LoadPlan, LoadResult, LoadTarget } from './load-worker.ts';
import { ROOT } from './daemon.ts';
import { spawnTracked } from './processes.ts';

export type { LoadPlan, LoadResult, LoadTarget };

/** `script` (a file of bench/lib) gets `plan` as JSON in argv[2] and prints its result as JSON. */
export async function runWorkerProcess<Plan, Result>(script: string, plan: Plan): Promise<Result> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', script), JSON.stringify(plan)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  if (code !== 0) throw new Error(`load generator ${script} exited with ${code}`);
  return JSON.parse(out) as Result;
}

export function runLoadProcess(plan: LoadPlan): Promise<LoadResult> {
  return runWorkerProcess<LoadPlan, LoadResult>('load-worker.ts', plan);
}
