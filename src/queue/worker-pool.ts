import type { JobSource } from './job-source.ts';

export type JobHandler = (id: string, signal: AbortSignal) => Promise<void>;

export class JobCancelled extends Error {
  constructor(readonly id: string, readonly why: 'cancelled' | 'shutdown') {
    super(`job ${id} ${why}`);
    this.name = 'JobCancelled';
  }
}

/**
 * A bounded number of workers taking ids from the job source in order. Each job runs with its own
 * AbortController so a cancel or a shutdown reaches the engine (and its subprocesses).
 */
export class WorkerPool {
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopped = false;

  constructor(
    private readonly source: JobSource,
    private readonly concurrency: number,
    private readonly handle: JobHandler,
    private readonly onError: (id: string, error: unknown) => void = () => undefined,
  ) {
    source.onPush(() => this.pump());
  }

  start(): void {
    this.stopped = false;
    this.pump();
  }

  get active(): number {
    return this.running.size;
  }

  activeIds(): string[] {
    return [...this.running.keys()];
  }

  private pump(): void {
    while (!this.stopped && this.running.size < this.concurrency) {
      const id = this.source.take();
      if (id === undefined) return;
      this.launch(id);
    }
  }

  private launch(id: string): void {
    const controller = new AbortController();
    const done = this.handle(id, controller.signal)
      .catch((error: unknown) => this.onError(id, error))
      .finally(() => {
        this.running.delete(id);
        this.pump();
      });
    this.running.set(id, { controller, done });
  }

  /** Aborts a running job; resolves when its handler has returned. False when it was not running. */
  async abort(id: string, why: 'cancelled' | 'shutdown' = 'cancelled'): Promise<boolean> {
    const job = this.running.get(id);
    if (!job) return false;
    job.controller.abort(new JobCancelled(id, why));
    await job.done;
    return true;
  }

  /** Stops taking work; running jobs get `drainMs` to finish, then are aborted as `shutdown`. */
  async stop(drainMs = 0): Promise<void> {
    this.stopped = true;
    const all = () => Promise.all([...this.running.values()].map((job) => job.done));
    if (drainMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all(), new Promise((resolve) => (timer = setTimeout(resolve, drainMs)))]);
      clearTimeout(timer);
    }
    for (const [id, job] of this.running) job.controller.abort(new JobCancelled(id, 'shutdown'));
    await all();
  }
}
