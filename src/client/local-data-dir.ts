import { access, constants, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LocalDataDir {
  path: string;
  remove(): Promise<void>;
}

const SHM = '/dev/shm';

/**
 * The data dir of the in-process service. Its store is thrown away when the command ends, so
 * the fsyncs that make a daemon's store durable buy nothing here and cost most of the system
 * time of a batch (five or so per conversion): on Linux the store goes to tmpfs (/dev/shm),
 * where fsync returns at once. Files (inputs, results, engine scratch) stay on disk, under the
 * usual temp dir, through a `blobs` symlink: a large video must not end up in memory.
 */
export async function createLocalDataDir(): Promise<LocalDataDir> {
  const disk = await mkdtemp(join(tmpdir(), 'conv-local-'));
  const removeDisk = () => rm(disk, { recursive: true, force: true });
  if (process.platform !== 'linux' || !(await access(SHM, constants.W_OK).then(() => true, () => false))) {
    return { path: disk, remove: removeDisk };
  }
  let memory: string | null = null;
  try {
    memory = await mkdtemp(join(SHM, 'conv-local-'));
    await symlink(disk, join(memory, 'blobs'), 'dir');
    const inMemory = memory;
    return {
      path: inMemory,
      remove: async () => {
        await Promise.all([rm(inMemory, { recursive: true, force: true }), removeDisk()]);
      },
    };
  } catch {
    if (memory) await rm(memory, { recursive: true, force: true });
    return { path: disk, remove: removeDisk };
  }
}
