import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LocalDataDir {
  path: string;
  remove(): Promise<void>;
}

/**
 * The data dir of the in-process service: only files (inputs, results) go there, under the usual
 * temp dir; its store lives in memory (system.ts `ephemeralStore`), since both are thrown away
 * when the command ends.
 */
export async function createLocalDataDir(): Promise<LocalDataDir> {
  const path = await mkdtemp(join(tmpdir(), 'conv-local-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
