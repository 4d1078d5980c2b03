/**
 * The files waiting for conversion, one entry per path. A file that changes again while it is
 * queued is converted once; while it is being converted, it is marked and converted once more
 * afterwards (the running conversion saw the older content). At most `limit` run at once.
 */
export class PathQueue {
  private readonly waiting: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly idle = new Set<() => void>();
  private stopped = false;

  constructor(
    private readonly limit: number,
    private readonly work: (path: string) => Promise<void>,
  ) {}

  push(path: string): void {
    if (this.stopped) return;
    if (this.running.has(path)) {
      this.dirty.add(path);
      return;
    }
    if (this.queued.has(path)) return;
    this.queued.add(path);
    this.waiting.push(path);
    this.pump();
  }

  /** Paths being converted now. */
  get active(): number {
    return this.running.size;
  }

  /** No new work starts; files not started yet are dropped. Returns how many were dropped. */
  stop(): number {
    this.stopped = true;
    const dropped = this.waiting.length;
    this.waiting.length = 0;
    this.queued.clear();
    this.dirty.clear();
    return dropped;
  }

  /** Resolves when nothing runs and nothing waits. */
  drained(): Promise<void> {
    if (this.running.size === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  private pump(): void {
    while (!this.stopped && this.running.size < this.limit && this.waiting.length > 0) {
      const path = this.waiting.shift()!;
      this.queued.delete(path);
      this.running.add(path);
      void this.work(path)
        .catch(() => undefined) // the work reports its own errors; one file never stops the queue
        .finally(() => {
          this.running.delete(path);
          if (this.dirty.delete(path)) this.push(path);
          this.pump();
          if (this.running.size === 0 && this.waiting.length === 0) {
            for (const resolve of this.idle) resolve();
            this.idle.clear();
          }
        });
    }
  }
}
