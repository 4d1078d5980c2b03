import { open, type FileHandle } from 'node:fs/promises';

const ignore = (): void => undefined;

/**
 * Makes new names in one directory durable, one fsync for many: a call waits for a sync that
 * starts after it was made (one already running may have missed its name), and every call made
 * while a sync runs shares the next one. The directory stays open between syncs (an fsync is one
 * hop to the thread pool, not an open, a sync and a close).
 */
export class DirectorySync {
  private handle: Promise<FileHandle> | null = null;
  /** The sync running now. */
  private running: Promise<void> | null = null;
  /** The sync that starts when the running one ends, shared by every call made meanwhile. */
  private following: Promise<void> | null = null;

  constructor(readonly path: string) {}

  sync(): Promise<void> {
    if (this.following) return this.following;
    if (!this.running) return this.start();
    const following = this.running.then(ignore, ignore).then(() => {
      this.following = null;
      return this.start();
    });
    this.following = following;
    return following;
  }

  private start(): Promise<void> {
    const run = this.fsync().finally(() => {
      if (this.running === run) this.running = null;
    });
    this.running = run;
    return run;
  }

  private async fsync(): Promise<void> {
    const opening = (this.handle ??= open(this.path, 'r'));
    try {
      await (await opening).sync();
    } catch (error) {
      // Opened anew next time: a handle whose sync failed is not trusted with the next one.
      if (this.handle === opening) this.handle = null;
      await opening.then((handle) => handle.close()).catch(ignore);
      throw error;
    }
  }

  /** Closes the directory once the syncs asked for have run (a sync asked for later opens it again). */
  async close(): Promise<void> {
    // A sync asked for while this waits is waited for too: none runs on the handle closed below.
    while (this.following || this.running) await (this.following ?? this.running)!.catch(ignore);
    const handle = this.handle;
    this.handle = null;
    await handle?.then((opened) => opened.close()).catch(ignore);
  }
}
