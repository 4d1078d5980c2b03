import { chmod, lstat, mkdir } from 'node:fs/promises';

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
  const stats = await lstat(path);
  if (!stats.isDirectory()) throw new Error(`${path} must be a directory, not a link or a file`);
  const uid = process.geteuid?.();
  if (uid !== undefined && stats.uid !== uid) throw new Error(`${path} belongs to uid ${stats.uid}, not to this user (${uid})`);
  if ((stats.mode & 0o777) !== 0o700) await chmod(path, 0o700);
}
