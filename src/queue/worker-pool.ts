import type { JobSource, Lane } from './job-source.ts';
import { QUICK_RUN_MS } from './recent-use.ts';

/**
 * Runs one job. `releaseSlot` gives the worker's slot to the next job before this one has ended:
 * a handler calls it when the heavy part is done and only bookkeeping is left (moving the result
 * into place, the store update), so that the engines are not idle while that waits on the disk.
 * `lane` is how the engines serve it: `quick` for a job on the quick lane and for a small
 * account's that found a regular worker free (JobSource.quickWorthy).
 */
export type JobHandler = (id: string, signal: AbortSignal, releaseSlot: () => void, lane: Lane) => Promise<void>;

export class JobCancelled extends Error {
  constructor(readonly id: string, readonly why: 'cancelled' | 'shutdown') {
    super(`job ${id} ${why}`);
    this.name = 'JobCancelled';
  }
}

export interface QuickLane {
  /** Places kept for light accounts with nothing running (0: no quick lane). */
  places: number;
  /**
   * A job on the quick lane still running after this long moves to the regular workers (over
   * their number, so the next regular job waits for it), and its quick place is free again.
   */
  moveAfterMs: number;
}

/**
 * A bounded number of workers taking ids from the job source in order. Each job runs with its own
 * AbortController so a cancel or a shutdown reaches the engine (and its subprocesses).
 *
 * Beside the workers, a quick lane: a few places only a light account with nothing running may
 * take (JobSource.take('quick')), so its small conversion starts within a moment however long the
 * others' conversions run. A quick job that turns out long moves to the regular count after
 * `moveAfterMs` (at most `places` jobs over the workers), freeing its place for the next one:
 * the lane is never held for long, and the running jobs stay bounded (workers + 2 x places).
 */
export class WorkerPool {
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  /** Jobs still holding a worker's slot: `concurrency` and the quick jobs moved over it. */
  private slotsTaken = 0;
  /** Jobs holding a quick place. */
  private quickTaken = 0;
  private readonly quick: QuickLane;
  /** Jobs that gave their slot back and are still finishing: at most `concurrency` too. */
  private finishing = 0;
  /**
   * Until start(): ids pushed before it wait. The daemon's start re-queues a dead node's work
   * (its leases) before it clears the scratch directories; a job taken then had its directory
   * removed under it (ENOTEMPTY at start, or an internal_error).
   */
  private stopped = true;

  constructor(
    private readonly source: JobSource,
    private readonly concurrency: number,
    private readonly handle: JobHandler,
    private readonly onError: (id: string, error: unknown) => void = () => undefined,
    quick: Partial<QuickLane> = {},
  ) {
    this.quick = { places: quick.places ?? 0, moveAfterMs: quick.moveAfterMs ?? QUICK_RUN_MS };
    source.onPush(() => this.pump());
  }

  start(): void {
    this.stopped = false;
    this.pump();
  }

  /** Conversions that may run at once on the regular workers. */
  get workers(): number {
    return this.concurrency;
  }

  /** Places of the quick lane. */
  get quickPlaces(): number {
    return this.quick.places;
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

  /**
   * Takes jobs while places are free, the regular workers first; with a source in memory it runs
   * to its end without waiting.
   */
  private async fill(): Promise<void> {
    while (!this.stopped) {
      this.pumpAgain = false;
      const lane: Lane | null = this.slotsTaken < this.concurrency ? 'regular' : this.quickTaken < this.quick.places ? 'quick' : null;
      if (!lane) return;
      const taken = this.source.take(lane);
      const id = typeof taken === 'object' ? await taken : taken;
      // Nothing the regular workers may take is quick either (a light account with nothing
      // running is under its share); nothing for the quick lane waits for a push or an end.
      if (id === undefined) return;
      if (this.stopped) {
        this.source.done(id);
        return;
      }
      this.launch(id, lane);
    }
  }

  private launch(id: string, lane: Lane): void {
    const controller = new AbortController();
    const startedAt = Date.now();
    let heldMs = 0;
    let holds: Lane | null = lane;
    if (lane === 'quick') this.quickTaken += 1;
    else this.slotsTaken += 1;
    let countedFinishing = false;
    const free = () => {
      if (holds === 'quick') this.quickTaken -= 1;
      else if (holds === 'regular') this.slotsTaken -= 1;
      holds = null;
      heldMs = Date.now() - startedAt;
    };
    let moveTimer: NodeJS.Timeout | undefined;
    const moveLater = () => {
      moveTimer = setTimeout(() => {
        if (holds !== 'quick') return;
        // Over the workers by at most the lane's places; past that it keeps its quick place and
        // tries again, as others end.
        if (this.slotsTaken >= this.concurrency + this.quick.places) {
          moveLater();
          return;
        }
        holds = 'regular';
        this.quickTaken -= 1;
        this.slotsTaken += 1;
        this.pump();
      }, this.quick.moveAfterMs);
      moveTimer.unref();
    };
    if (lane === 'quick') moveLater();
    const releaseSlot = () => {
      // Jobs finishing after their slot was given back are bounded too (as many as workers): on
      // a disk slower than the engines they would otherwise pile up without limit.
      if (!holds || this.finishing >= this.concurrency + this.quick.places) return;
      clearTimeout(moveTimer);
      free();
      countedFinishing = true;
      this.finishing += 1;
      this.pump();
    };
    // Registered before the handler runs: a handler that releases its slot at once must not
    // let pump() take the same id twice, and abort() must find it meanwhile.
    const entry = { controller, done: Promise.resolve() };
    this.running.set(id, entry);
    // A small account's job is served as quick by the engines, whichever place it holds.
    const served: Lane = lane === 'quick' || this.source.quickWorthy(id) ? 'quick' : 'regular';
    entry.done = this.callHandler(id, controller.signal, releaseSlot, served)
      .catch((error: unknown) => this.onError(id, error))
      .finally(() => {
        clearTimeout(moveTimer);
        // A late releaseSlot() finds nothing held and counts nothing again.
        if (holds) free();
        this.running.delete(id);
        this.source.done(id, heldMs);
        if (countedFinishing) this.finishing -= 1;
        this.pump();
      });
  }

  /** The handler's promise; a handler that throws before returning one rejects it instead. */
  private callHandler(id: string, signal: AbortSignal, releaseSlot: () => void, lane: Lane): Promise<void> {
    try {
      return this.handle(id, signal, releaseSlot, lane);
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
