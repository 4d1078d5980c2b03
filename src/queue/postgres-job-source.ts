import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Notifications } from '../store/postgres/notifications.ts';
import type { QueueSql } from '../store/postgres/queue-sql.ts';
import type { JobOwner, JobSource, Lane } from './job-source.ts';
import { RecentUse } from './recent-use.ts';

/** The NOTIFY channel of new work: every node's idle workers wake on it. */
const QUEUED = 'convd_queued';
/** A claim is held this long unless its node renews it (every third of it). */
const DEFAULT_LEASE_MS = 30_000;
/** What a node does without a notification: look again, in case one was missed. */
const LOOK_AGAIN_MS = 5_000;

export interface PostgresJobSourceOptions {
  leaseMs?: number;
  /**
   * The id this node claims under: the one kept in its data dir (node-id.ts), so that a restart
   * knows its own leases. Unset: one made for this process alone.
   */
  node?: string;
  /**
   * Several daemons share the database: leases found at start are live nodes', and a running
   * conversion whose lease runs out (its node died) is handed to `onAbandoned` by whichever node
   * takes it over first. Alone (false), every lease found at start is a dead predecessor's.
   */
  shared?: boolean;
  onAbandoned?: (id: string) => Promise<void>;
  /**
   * The owner of an account's jobs (its share of this node's workers), asked for the account of
   * every claim: a worker-only node runs conversions submitted elsewhere, pushed to it by no one.
   */
  ownerOf?: (account: string) => Promise<JobOwner | undefined>;
  /** Told when the listening connection drops (the source goes on, looking every few seconds). */
  log?: (event: string, fields: Record<string, unknown>) => void;
}

/**
 * The queue is the conversions table: a worker claims the oldest queued
 * row that no live lease holds (`FOR UPDATE SKIP LOCKED`: two nodes never take the same one)
 * and holds it with a lease this node renews while the conversion runs; a lease that runs out
 * (its node died) makes the row claimable again. New work is announced with NOTIFY, so idle
 * workers wake at once on every node instead of polling; a slow look every few seconds covers a
 * notification lost with a dropped connection. An account at its share of this node's workers
 * is skipped, as the in-memory queue does; between accounts the order is first come, first served.
 */
export class PostgresJobSource implements JobSource {
  readonly node: string;
  private readonly listeners: (() => void)[] = [];
  /**
   * Each account's share of this node's workers, as the service last gave it at a push or a
   * claim (kept per account, not per conversion: most ids pushed here are run by other nodes).
   */
  private readonly shares = new Map<string, number>();
  private readonly running = new Map<string, { account: string; quickWorthy: boolean }>();
  private readonly runningByAccount = new Map<string, number>();
  private readonly leaseMs: number;
  private readonly recent = new RecentUse();
  private queued = 0;
  private timers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>) | null = null;
  /** The claims, leases and counts: the queue's statements (queue-sql.ts). */
  private readonly queue: QueueSql;
  private readonly notifications: Notifications;

  /** `database`: a PostgresStore, whose queue and notifications this source uses. */
  constructor(database: { queue: QueueSql; notifications: Notifications }, private readonly options: PostgresJobSourceOptions = {}) {
    this.queue = database.queue;
    this.notifications = database.notifications;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.node = options.node ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  async start(): Promise<void> {
    // One daemon per database (its node lock): every lease there is a dead predecessor's.
    if (!this.options.shared) await this.queue.clearLeases();
    this.unlisten = await this.notifications.listen(QUEUED, () => this.wake(), (error) => {
      this.options.log?.('queue.listen_lost', { error: error.message });
    });
    // Before the first renewal, which would otherwise keep the leases of the conversions this
    // node ran before its restart alive for good.
    if (this.options.shared) await this.takeBack();
    const renew = setInterval(() => {
      void this.queue.renewLeases(this.node, this.leaseMs).catch(() => undefined);
    }, Math.max(100, Math.floor(this.leaseMs / 3)));
    const look = setInterval(() => {
      void this.queue.countQueued().then((n) => {
        this.queued = n;
        if (n > 0) this.wake();
      }, () => undefined);
    }, LOOK_AGAIN_MS);
    renew.unref();
    look.unref();
    this.timers = [renew, look];
    if (this.options.shared) {
      await this.reap();
      const reaper = setInterval(() => void this.reap(), Math.max(100, Math.floor(this.leaseMs / 3)));
      reaper.unref();
      this.timers.push(reaper);
    }
  }

  /**
   * A node restarted under its old id (its data dir's): whatever it held a lease on when it went
   * down runs nowhere now, so those leases end at once rather than when they run out. A queued
   * conversion is free to be claimed again; a running one is left with a lease that has run out,
   * for the reaper (this node's, straight after, or another's) to take over as a dead node's.
   */
  private async takeBack(): Promise<void> {
    const ended = await this.queue.endLeasesOf(this.node);
    if (ended > 0) this.options.log?.('queue.leases_taken_back', { node: this.node, leases: ended });
  }

  /** Takes over the running conversions of nodes that stopped renewing their leases. */
  private async reap(): Promise<void> {
    try {
      for (const id of await this.queue.expiredLeaseIds()) {
        if (await this.queue.takeExpiredLease(id)) {
          this.options.log?.('queue.lease_expired', { id });
          await this.options.onAbandoned?.(id);
        }
      }
    } catch (error) {
      this.options.log?.('queue.reap_failed', { error: error instanceof Error ? error.message : String(error) });
    }
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    await this.unlisten?.();
    this.unlisten = null;
  }

  push(id: string, owner?: JobOwner): void {
    if (owner) this.shares.set(owner.account, owner.share);
    this.queued += 1;
    // Every node hears it, this one too (its own listener wakes its workers).
    void this.notifications.notify(QUEUED, id).catch(() => this.wake());
  }

  remove(): boolean {
    // A queued conversion leaves the queue by its status (cancelled): no claim will take it.
    return true;
  }

  async take(lane: Lane = 'regular'): Promise<string | undefined> {
    const skip = [...this.runningByAccount].filter(([account, count]) => count >= (this.shares.get(account) ?? Infinity)).map(([account]) => account);
    // The quick lane: accounts running nothing anywhere in the cluster (the claim looks), and not
    // heavy by what they ran here lately.
    if (lane === 'quick') skip.push(...this.recent.heavy());
    const claimed = await this.queue.claimQueued(this.node, this.leaseMs, skip, lane === 'quick');
    if (claimed === undefined) {
      this.queued = 0;
      return undefined;
    }
    this.queued = Math.max(0, this.queued - 1);
    const { id, account, idle } = claimed;
    this.running.set(id, { account, quickWorthy: idle && this.recent.onlyQuickRuns(account) });
    this.runningByAccount.set(account, (this.runningByAccount.get(account) ?? 0) + 1);
    // Before the next take: an account that was unknown here is held to its share from now on.
    const owner = await this.options.ownerOf?.(account).catch(() => undefined);
    if (owner) this.shares.set(account, owner.share);
    return id;
  }

  quickWorthy(id: string): boolean {
    return this.running.get(id)?.quickWorthy === true;
  }

  done(id: string, heldMs = 0): void {
    const job = this.running.get(id);
    if (job) {
      this.recent.record(job.account, heldMs);
      this.running.delete(id);
      const left = (this.runningByAccount.get(job.account) ?? 1) - 1;
      if (left > 0) this.runningByAccount.set(job.account, left);
      else this.runningByAccount.delete(job.account);
    }
    void this.queue.releaseLease(id, this.node).catch(() => undefined);
  }

  /** Queued conversions of the whole cluster (the database's count, refreshed every few seconds). */
  get size(): number {
    return this.queued;
  }

  get leasesHeld(): number {
    return this.running.size;
  }

  onPush(listener: () => void): void {
    this.listeners.push(listener);
  }

  private wake(): void {
    for (const listener of this.listeners) listener();
  }
}
