import { readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Removes what processes that no longer run left in the temp directory: entries whose name
 * `madeBy` matches with the maker's pid as its first group (a daemon killed -9 cannot clean up
 * after itself). Only this user's entries: a shared /tmp holds other users' convd too. Returns how
 * many were removed.
 */
export async function removeOrphanedDirs(madeBy: RegExp, remove: (path: string) => Promise<void>): Promise<number> {
  const root = tmpdir();
  const names = await readdir(root).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const maker = Number(madeBy.exec(name)?.[1]);
    if (!maker || maker === process.pid || isRunning(maker)) continue;
    const path = join(root, name);
    const owner = await stat(path).then((info) => info.uid, () => -1);
    if (owner !== process.getuid?.()) continue;
    await remove(path).then(() => removed++, () => undefined);
  }
  return removed;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
