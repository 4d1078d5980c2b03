import type { JobSource } from './job-source.ts';

/**
 * Runs one job. `releaseSlot` gives the worker's slot to the next job before this one has ended:
 * a handler calls it when the heavy part is done and only bookkeeping is left (moving the result
 * into place, the store update), so that the engines are not idle while that waits on the disk.
 */
export type JobHandler = (id: string, signal: AbortSignal, releaseSlot: () => void) => Promise<void>;

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
  /** Jobs still holding a worker's slot: at most `concurrency`. */
  private slotsTaken = 0;
  /** Jobs that gave their slot back and are still finishing: at most `concurrency` too. */
  private finishing = 0;
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

  /** Conversions that may run at once. */
  get workers(): number {
    return this.concurrency;
  }

  /** Jobs not yet ended, including those past the engine that have given their slot back (at most twice the workers). */
  get active(): number {
    return this.running.size;
  }

  activeIds(): string[] {
    return [...this.running.keys()];
  }

  /** A pump is running (a database source answers asynchronously); another call asks it to go round again. */
  private pumping = false;
  private pumpAgain = false;

  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    this.pumpAgain = false;
    void this.fill().catch((error: unknown) => this.onError('', error)).finally(() => {
      this.pumping = false;
      if (this.pumpAgain) this.pump();
    });
  }

  /** Takes jobs while slots are free; with a source in memory it runs to its end without waiting. */
  private async fill(): Promise<void> {
    while (!this.stopped && this.slotsTaken < this.concurrency) {
      this.pumpAgain = false;
      const taken = this.source.take();
      const id = typeof taken === 'object' ? await taken : taken;
      if (id === undefined) return;
      if (this.stopped) {
        this.source.done(id);
        return;
      }
      this.launch(id);
    }
  }

  private launch(id: string): void {
    const controller = new AbortController();
    this.slotsTaken += 1;
    let holdsSlot = true;
    let countedFinishing = false;
    const releaseSlot = () => {
      // Jobs finishing after their slot was given back are bounded too (as many as workers): on
      // a disk slower than the engines they would otherwise pile up without limit.
      if (!holdsSlot || this.finishing >= this.concurrency) return;
      holdsSlot = false;
      countedFinishing = true;
      this.finishing += 1;
      this.slotsTaken -= 1;
      this.pump();
    };
    // Registered before the handler runs: a handler that releases its slot at once must not
    // let pump() take the same id twice, and abort() must find it meanwhile.
    const entry = { controller, done: Promise.resolve() };
    this.running.set(id, entry);
    entry.done = this.callHandler(id, controller.signal, releaseSlot)
      .catch((error: unknown) => this.onError(id, error))
      .finally(() => {
        this.running.delete(id);
        this.source.done(id);
        if (holdsSlot) this.slotsTaken -= 1;
        if (countedFinishing) this.finishing -= 1;
        holdsSlot = false; // a late releaseSlot() must not count this job again
        this.pump();
      });
  }

  /** The handler's promise; a handler that throws before returning one rejects it instead. */
  private callHandler(id: string, signal: AbortSignal, releaseSlot: () => void): Promise<void> {
    try {
      return this.handle(id, signal, releaseSlot);
    } catch (error) {
      return Promise.reject(error);
    }
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
