import { RecentUse } from './recent-use.ts';

/** Whose a job is, and how many of that owner's jobs may run at once. */
export interface JobOwner {
  /** The account the conversion belongs to. */
  account: string;
  /** Jobs of this account running at most (Infinity: no share of its own, the workers are the limit). */
  share: number;
}

/**
 * Where the worker pool takes conversion ids from: in-process (MemoryJobSource), or the
 * PostgreSQL conversions table (PostgresJobSource: claims with leases, woken by NOTIFY).
 */
export interface JobSource {
  push(id: string, owner?: JobOwner): void;
  /** Removes a queued id (cancel); true when it was still waiting. */
  remove(id: string): boolean;
  /**
   * The next id to run, or undefined when none may run now (empty, or every owner at its share).
   * A source in a database answers later (a claim); one in memory at once. On the `quick` lane
   * only a job of a light account with nothing running is taken (see WorkerPool).
   */
  take(lane?: Lane): string | undefined | Promise<string | undefined>;
  /**
   * The job taken as `id` is a small account's (running nothing when it was taken, and every run
   * of it lately a quick one: RecentUse.onlyQuickRuns), whichever place it got: the engines serve
   * it as quick (their warm spares), so a small conversion that found a regular worker free does
   * not wait for an engine's cold start. An account whose conversions run long is not served so
   * after its first: its next ones would take the spares kept for others. Until `done`.
   */
  quickWorthy(id: string): boolean;
  /** The job taken as `id` has ended (it held a worker `heldMs`): its owner's place is free again. */
  done(id: string, heldMs?: number): void;
  readonly size: number;
  /** Called whenever an id is pushed, so idle workers wake without polling. */
  onPush(listener: () => void): void;
  /** Conversions this process holds a claim on (a queue in a database); absent in memory. */
  readonly leasesHeld?: number;
  /** Starts what the source runs beside the pool (a database's listener, lease renewal). */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/**
 * `regular`: the workers, shared fairly between accounts. `quick`: the places kept for accounts
 * with nothing running that have used little time lately, so that their small conversions start
 * at once however busy the workers are.
 */
export type Lane = 'regular' | 'quick';

const NOBODY: JobOwner = { account: '', share: Infinity };

/**
 * In-process queue, fair between accounts: one FIFO per account, the accounts served in turn,
 * and an account at its share (a tenant's: all workers but one) waits while the others run. A
 * tenant with long conversions (each up to its engine's time limit) cannot hold every worker,
 * and one that submits a hundred does not make the next account wait behind all of them. The
 * quick lane takes the first job of a light account (RecentUse) that has nothing running.
 */
export class MemoryJobSource implements JobSource {
  /** Queued ids per account, in order; a Map keeps the accounts in the order they came. */
  private readonly queues = new Map<string, string[]>();
  private readonly owners = new Map<string, JobOwner>();
  private readonly running = new Map<string, number>();
  private readonly worthy = new Set<string>();
  private readonly listeners: (() => void)[] = [];
  private queued = 0;

  constructor(private readonly recent = new RecentUse()) {}

  push(id: string, owner: JobOwner = NOBODY): void {
    if (this.owners.has(id)) return;
    this.owners.set(id, owner);
    let queue = this.queues.get(owner.account);
    if (!queue) this.queues.set(owner.account, (queue = []));
    queue.push(id);
    this.queued += 1;
    for (const listener of this.listeners) listener();
  }

  remove(id: string): boolean {
    const owner = this.owners.get(id);
    const queue = owner ? this.queues.get(owner.account) : undefined;
    const at = queue?.indexOf(id) ?? -1;
    if (!queue || at < 0) return false;
    queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(owner!.account);
    this.owners.delete(id);
    this.queued -= 1;
    return true;
  }

  take(lane: Lane = 'regular'): string | undefined {
    for (const [account, queue] of this.queues) {
      const owner = this.owners.get(queue[0]!)!;
      const running = this.running.get(account) ?? 0;
      if (running >= owner.share) continue;
      if (lane === 'quick' && (running > 0 || !this.recent.isLight(account))) continue;
      const id = queue.shift()!;
      if (running === 0 && this.recent.onlyQuickRuns(account)) this.worthy.add(id);
      // Served: this account goes to the back of the turn (or leaves it, when it has no more).
      this.queues.delete(account);
      if (queue.length > 0) this.queues.set(account, queue);
      this.running.set(account, (this.running.get(account) ?? 0) + 1);
      this.queued -= 1;
      return id;
    }
    return undefined;
  }

  done(id: string, heldMs = 0): void {
    const owner = this.owners.get(id);
    if (!owner) return;
    this.owners.delete(id);
    this.worthy.delete(id);
    this.recent.record(owner.account, heldMs);
    const left = (this.running.get(owner.account) ?? 1) - 1;
    if (left > 0) this.running.set(owner.account, left);
    else this.running.delete(owner.account);
  }

  quickWorthy(id: string): boolean {
    return this.worthy.has(id);
  }

  get size(): number {
    return this.queued;
  }

  onPush(listener: () => void): void {
    this.listeners.push(listener);
  }
}
