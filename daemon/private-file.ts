import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A file being written for this user's eyes only; nothing is at `path` until `commit`. */
export interface PendingPrivateFile {
  /** Writes `content`, syncs it and moves it to its path (replacing what was there), then syncs the directory. */
  commit(content: string): Promise<void>;
  discard(): Promise<void>;
}

/**
 * Starts a file at `path` that no other user can read at any moment: a new temporary file
 * beside it, created exclusively with mode 0600 (a umask can only take bits away) and set to
 * exactly 0600 through its descriptor, renamed into place whole. Opened up front, so that a
 * directory where it cannot be written is found out before anything depends on the file.
 */
export async function preparePrivateFile(path: string): Promise<PendingPrivateFile> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}`);
  const handle = await open(temporary, 'wx', 0o600);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  try {
    await handle.chmod(0o600);
  } catch (error) {
    await close();
    await rm(temporary, { force: true });
    throw error;
  }
  return {
    async commit(content) {
      try {
        await handle.writeFile(content);
        await handle.sync();
      } finally {
        await close();
      }
      await rename(temporary, path);
      // The rename is durable once the directory is: the file outlives a power cut with the account it belongs to.
      const directory = await open(dirname(path), 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    },
    async discard() {
      await close().catch(() => undefined);
      await rm(temporary, { force: true });
    },
  };
}
