/** Runs bench/lib/load-worker.ts as a separate process and returns its result. */
import { join } from 'node:path';
import type { LoadPlan, LoadResult, LoadTarget } from './load-worker.ts';
import { ROOT } from './daemon.ts';
import { spawnTracked } from './processes.ts';

export type { LoadPlan, LoadResult, LoadTarget };

export async function runLoadProcess(plan: LoadPlan): Promise<LoadResult> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 'load-worker.ts'), JSON.stringify(plan)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(out) as LoadResult;
}
