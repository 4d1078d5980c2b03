import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';

/**
 * Makes `path` a directory that only this user can enter (0700), before anything is put in it:
 * created with that mode (no umask can add to it), or, when it is already there, checked to be a
 * real directory of ours (not a link somebody placed) and narrowed to 0700. Whatever is created
 * inside is out of other users' reach from its first moment, whatever its own mode.
 */
export async function ensurePrivateDir(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Opened without following a link, then checked and narrowed through the same handle: a link
  // put in its place between a check and a chmod by path could not redirect the chmod.
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw new Error(`${path} must be a directory, not a link or a file`);
    throw error;
  }
  try {
    const stats = await handle.stat();
    const uid = process.geteuid?.();
    if (uid !== undefined && stats.uid !== uid) throw new Error(`${path} belongs to uid ${stats.uid}, not to this user (${uid})`);
    if ((stats.mode & 0o777) !== 0o700) await handle.chmod(0o700);
  } finally {
    await handle.close();
  }
}
