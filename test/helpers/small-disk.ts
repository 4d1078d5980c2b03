import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A data dir on a file system of its own, `sizeMb` big, or why there is none. */
export type SmallDisk = { dir: string; skip: false; remove(): Promise<void> } | { dir: null; skip: string };

/**
 * A tmpfs of `sizeMb` MiB mounted on a new temp dir (as root; the reason when it cannot be), for
 * the suites that fill a data dir's disk. `remove()` unmounts it and deletes the mount point; the
 * daemon on it must be stopped first.
 */
export async function smallDisk(sizeMb: number): Promise<SmallDisk> {
  if (process.getuid?.() !== 0) return { dir: null, skip: `mounting a ${sizeMb} MiB tmpfs for the data dir needs root` };
  const dir = await mkdtemp(join(tmpdir(), 'convd-small-disk-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir]);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    return { dir: null, skip: `cannot mount a tmpfs for the data dir: ${error instanceof Error ? error.message.trim() : String(error)}` };
  }
  return {
    dir,
    skip: false,
    async remove() {
      await run('umount', [dir]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
