import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * LibreOffice profiles, one per instance, in the system's temp directory, named after the process
 * that made them (`convd-office-<pid>-XXXXXX`). An instance that ends removes its own; a process
 * killed outright (`kill -9`, a crash, the OOM killer) cannot, so the next pool removes the
 * profiles whose maker is gone.
 */
const PREFIX = 'convd-office-';
const MADE_BY = /^convd-office-(\d+)-/;

export function makeProfile(): Promise<string> {
  return mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`));
}

/** Removes the profiles of processes that no longer run; returns how many. */
export async function removeOrphanedProfiles(): Promise<number> {
  const root = tmpdir();
  const names = await readdir(root).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const maker = Number(MADE_BY.exec(name)?.[1]);
    if (!maker || maker === process.pid || isRunning(maker)) continue;
    const path = join(root, name);
    // Only this user's: a shared /tmp holds other users' convd too.
    const owner = await stat(path).then((info) => info.uid, () => -1);
    if (owner !== process.getuid?.()) continue;
    await rm(path, { recursive: true, force: true }).then(() => removed++, () => undefined);
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
