import { open, readFile, rename, unlink } from 'node:fs/promises';
import type { Adapter } from 'lowdb';

/**
 * lowdb adapter that survives power loss and kill -9: the new content is written to a temp file,
 * fsynced, then renamed over the old one, so the file on disk is always one complete version.
 * (lowdb's own JSONFile renames too but never fsyncs.) The caller fsyncs the directory once per
 * batch of renames.
 */
export class DurableJsonFile<T> implements Adapter<T> {
  constructor(private readonly path: string) {}

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    return JSON.parse(text) as T;
  }

  async write(data: T): Promise<void> {
    const temp = `${this.path}.tmp`;
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, this.path);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
  }
}

export async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
