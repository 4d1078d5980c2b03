import { readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export class DataDirLockedError extends Error {
  constructor(readonly pid: number, dir: string) {
    super(`The data directory ${dir} is in use by another convd (pid ${pid}).`);
    this.name = 'DataDirLockedError';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A daemon killed -9 whose parent has not reaped it yet still answers signal 0, as a zombie.
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}

/**
 * One writer per data dir: the JSON files must never have two. The lock file holds the owner's
 * pid; a lock left by a process that died (kill -9) is taken over.
 */
export async function acquireDataDirLock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, 'convd.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return async () => {
        const owner = await readFile(path, 'utf8').catch(() => '');
        if (owner.trim() === String(process.pid)) await unlink(path).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) throw new DataDirLockedError(pid, dir);
      await unlink(path).catch(() => undefined);
    }
  }
  throw new Error(`Could not lock the data directory ${dir}.`);
}

/** The pid of the live convd holding the data dir, if any (admin commands then go through its socket). */
export async function lockOwner(dir: string): Promise<number | null> {
  const pid = Number((await readFile(join(dir, 'convd.lock'), 'utf8').catch(() => '')).trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}
