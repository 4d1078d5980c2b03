import { randomUUID } from 'node:crypto';
import type { PublicConversion } from '../model/conversion.ts';
import type { DeliveryAttempt, DeliveryRecord, Store } from '../store/types.ts';
import { checkCallbackUrl } from './callback-url.ts';
import { nextRetryDelayMs } from './schedule.ts';
import { signWebhook } from './signature.ts';
import type { WebhookTransport } from './transport.ts';

/** The part of the Store the deliverer uses (any full Store fits). */
export type DeliveryStore = Pick<Store, 'getDelivery' | 'addDelivery' | 'putDelivery' | 'listDeliveries' | 'flush' | 'claimDelivery' | 'claimPendingDeliveries'>;

export type WebhookEvent = DeliveryRecord['event'];

export interface WebhookLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface WebhookDelivererOptions {
  store: DeliveryStore;
  /** The account's current secret, read at every attempt so that a rotation applies to later ones. */
  secretFor(accountId: string): Promise<string>;
  /** Test-only: allow http callbacks and private/loopback addresses. */
  allowInsecure: boolean;
  /** Extra PEM CA to trust beside the system roots (tests trust a self-signed receiver). */
  trustedCa?: string | Buffer;
  /** Multiplies the retry waits (1 in production; tests use e.g. 0.001). */
  scheduleScale?: number;
  /** Jitter source, uniform in [0, 1); Math.random by default. */
  random?: () => number;
  /** Per attempt; no answer by then counts as a failed attempt. Default 10 000. */
  timeoutMs?: number;
  /** Wall clock in ms for timestamps and signatures; Date.now by default. */
  now?: () => number;
  log?: WebhookLog;
  /**
   * Several nodes share the store: each attempt is claimed first (one node sends it), the node
   * that scheduled a retry holds the delivery until `claimMs` after it is due, and every node
   * claims the due deliveries nobody holds every `claimMs` (one statement that returns only
   * those), so a retry of a node that died is sent by another. `node` is kept across restarts
   * (the data dir's): a restarted node takes back the retries it held at once.
   */
  shared?: { node: string; claimMs: number };
}

export interface EnqueueInput {
  conversionId: string;
  accountId: string;
  url: string;
  event: WebhookEvent;
  /** The conversion object as GET returns it at the moment of the end state. */
  data: PublicConversion;
}

const SILENT: WebhookLog = { info() {}, warn() {}, error() {} };
/** Deliveries one claim of a node takes at most; a full one is followed by another at once. */
const CLAIM_BATCH = 100;
/** setTimeout's ceiling; no wait of the schedule comes near it, a clock jump might. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface SendOutcome {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** No retry can succeed (the URL breaks the scheme rule): fail the delivery at once. */
  permanent: boolean;
}

/**
 * Delivers webhooks with retries that survive restarts. Every state change is written to the store
 * and flushed before anything else happens, in this order: the delivery is persisted before its
 * first attempt; an attempt's outcome is persisted before the next attempt is scheduled; a 2xx is
 * persisted (status `delivered`) before the attempt is considered done, and a delivered record is
 * never attempted again by the schedule. The one window left is between the receiver's 2xx and
 * that flush (milliseconds): a crash there repeats the delivery on restart with the same
 * `X-Service-Delivery` id, which is what that id is for. A crash during an attempt likewise means
 * the attempt is made again on restart (at least once, never silently lost).
 *
 * Attempts of one delivery never overlap: they are chained per id.
 */
export class WebhookDeliverer {
  private readonly store: DeliveryStore;
  private readonly secretFor: (accountId: string) => Promise<string>;
  private readonly allowInsecure: boolean;
  private readonly scheduleScale: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly log: WebhookLog;
  /** Loaded on the first attempt: got and the SSRF agents cost ~50 ms to import, and most runs
   * of the in-process CLI never send a webhook. */
  private transport: Promise<WebhookTransport> | null = null;
  private readonly transportOptions: ConstructorParameters<typeof WebhookTransport>[0];
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly enqueuing = new Map<string, Promise<DeliveryRecord>>();
  private running = false;
  private readonly shared: { node: string; claimMs: number } | null;
  private resumer: NodeJS.Timeout | null = null;

  constructor(options: WebhookDelivererOptions) {
    this.shared = options.shared ?? null;
    this.store = options.store;
    this.secretFor = options.secretFor;
    this.allowInsecure = options.allowInsecure;
    this.scheduleScale = options.scheduleScale ?? 1;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? SILENT;
    this.transportOptions = {
      allowPrivateAddresses: options.allowInsecure,
      trustedCa: options.trustedCa,
      timeoutMs: options.timeoutMs ?? 10_000,
    };
  }

  /**
   * Persists a delivery for an end state and, when started, makes its first attempt at once
   * (without waiting for it). Before start() or after stop() it is only persisted: start() sends it.
   * Idempotent per conversion and event, across every node that shares the store (the store adds
   * one delivery per conversion and event): a second call returns the existing delivery, so a
   * caller recovering after a crash may enqueue again without a second send.
   */
  enqueue(input: EnqueueInput): Promise<DeliveryRecord> {
    // Concurrent calls for the same event share one creation instead of racing past the lookup.
    const key = `${input.conversionId}\u0000${input.event}`;
    const inProgress = this.enqueuing.get(key);
    if (inProgress) return inProgress;
    const created = this.createDelivery(input).finally(() => this.enqueuing.delete(key));
    this.enqueuing.set(key, created);
    return created;
  }

  private async createDelivery(input: EnqueueInput): Promise<DeliveryRecord> {
    const createdAt = new Date(this.now()).toISOString();
    const record: DeliveryRecord = {
      id: randomUUID(),
      conversion_id: input.conversionId,
      account_id: input.accountId,
      event: input.event,
      url: input.url,
      // Serialized once: every attempt sends (and signs) exactly these bytes.
      body: JSON.stringify({ event: input.event, data: input.data }),
      status: 'pending',
      attempts: [],
      next_attempt_at: createdAt,
      created_at: createdAt,
    };
    // Added only if the conversion has no delivery for the event yet (here or on another node):
    // else that one is the delivery, and whoever made it sends it (or resumes it at start).
    const kept = await this.store.addDelivery(record);
    await this.store.flush();
    if (kept.id !== record.id) return kept;
    if (this.running) this.runAttempt(record.id, false).catch((error: unknown) => this.reportBug(record.id, error));
    return record;
  }

  /** Resumes every pending delivery from the store, each at its `next_attempt_at` (at once if past). */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const shared = this.shared && this.store.claimPendingDeliveries ? this.shared : null;
    const pending = shared ? await this.claimDue(shared, true) : await this.resume(await this.store.listDeliveries({ status: 'pending' }));
    if (pending > 0) this.log.info('resuming webhook deliveries', { pending });
    if (shared) {
      this.resumer = setInterval(() => void this.claimDue(shared, false).catch(() => undefined), shared.claimMs);
      this.resumer.unref();
    }
  }

  /** Schedules every delivery given that is not scheduled here yet; how many were given. */
  private resume(pending: DeliveryRecord[]): number {
    for (const record of pending) {
      if (!this.chains.has(record.id) && !this.timers.has(record.id)) this.schedule(record);
    }
    return pending.length;
  }

  /**
   * Several nodes: claims the due deliveries no live node holds (and, with `own`, at start, the
   * ones this node held when it went down) and schedules them; how many it took.
   */
  private async claimDue(shared: { node: string; claimMs: number }, own: boolean): Promise<number> {
    let taken = 0;
    // Its own ones come whole with the first claim; the due ones a batch at a time.
    for (let first = true; ; first = false) {
      const now = this.now();
      const claimed = await this.store.claimPendingDeliveries!(shared.node, {
        dueBy: new Date(now).toISOString(), untilMs: now + this.transportOptions.timeoutMs + shared.claimMs, limit: CLAIM_BATCH, own: own && first,
      });
      taken += this.resume(claimed);
      if (claimed.length < CLAIM_BATCH || !this.running) return taken;
    }
  }

  /** Stops scheduling and waits for attempts in flight (each bounded by the time-out). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.resumer) clearInterval(this.resumer);
    this.resumer = null;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.chains.values()]);
    if (this.transport) (await this.transport).close();
    this.transport = null;
  }

  /**
   * One attempt now, on the operator's request, signed anew with the same delivery id and body.
   * A pending delivery makes its next scheduled attempt early (the schedule goes on from there if
   * it fails); a delivered or failed one gets one extra attempt and keeps its status unless the
   * answer is a 2xx (then `delivered`). Returns the updated record, or undefined for an unknown id.
   */
  async redeliver(id: string): Promise<DeliveryRecord | undefined> {
    return this.runAttempt(id, true);
  }

  private schedule(record: DeliveryRecord): void {
    if (!this.running || record.status !== 'pending') return;
    this.clearTimer(record.id);
    const dueMs = Date.parse(record.next_attempt_at ?? record.created_at);
    const remaining = dueMs - this.now();
    // +1: libuv measures timers against a loop time cached in whole ms, so a timer can fire up to
    // a millisecond early by the wall clock; an attempt must never start before its persisted time.
    const delay = remaining > 0 ? Math.min(MAX_TIMER_MS, remaining + 1) : 0;
    const timer = setTimeout(() => {
      this.timers.delete(record.id);
      this.runAttempt(record.id, false).catch((error: unknown) => this.reportBug(record.id, error));
    }, delay);
    // The daemon's server keeps the process alive; pending retries alone should not.
    timer.unref();
    this.timers.set(record.id, timer);
  }

  private clearTimer(id: string): void {
    const timer = this.timers.get(id);
    if (timer) clearTimeout(timer);
    this.timers.delete(id);
  }

  /** Chains the attempt behind any attempt of the same delivery still in flight. */
  private runAttempt(id: string, manual: boolean): Promise<DeliveryRecord | undefined> {
    const previous = this.chains.get(id) ?? Promise.resolve();
    const run = previous.then(() => this.attempt(id, manual));
    const settled = run.catch(() => undefined);
    this.chains.set(id, settled);
    void settled.then(() => {
      if (this.chains.get(id) === settled) this.chains.delete(id);
    });
    return run;
  }

  private async attempt(id: string, manual: boolean): Promise<DeliveryRecord | undefined> {
    const record = await this.store.getDelivery(id);
    if (!record) return undefined;
    // A timer or a resume can race with a 2xx recorded by a manual attempt: the store decides.
    if (!manual && record.status !== 'pending') return record;
    this.clearTimer(id);
    // Several nodes: one of them sends this attempt; the others look again when its claim runs out.
    if (this.shared && !manual && this.store.claimDelivery) {
      const hold = this.now() + this.transportOptions.timeoutMs + this.shared.claimMs;
      if (!(await this.store.claimDelivery(id, this.shared.node, hold, record.attempts.length))) return record;
    }

    const startedMs = this.now();
    const outcome = await this.send(record, startedMs);
    const attempt: DeliveryAttempt = {
      at: new Date(startedMs).toISOString(),
      status_code: outcome.statusCode,
      error: outcome.error,
      duration_ms: outcome.durationMs,
    };
    const attempts = [...record.attempts, attempt];
    const success = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    let status = record.status;
    let next = record.next_attempt_at;
    if (success) {
      status = 'delivered';
      next = null;
    } else if (record.status === 'pending') {
      // Waits are counted from the start of the attempt, so the whole schedule stays ~91 min
      // however long each failing attempt took.
      const delay = outcome.permanent
        ? null
        : nextRetryDelayMs(attempts.length, { scale: this.scheduleScale, random: this.random });
      status = delay === null ? 'failed' : 'pending';
      next = delay === null ? null : new Date(startedMs + delay).toISOString();
    }
    const updated: DeliveryRecord = { ...record, status, attempts, next_attempt_at: next };
    // The retry is this node's until a while after it is due; if the node dies, another sends it.
    if (this.shared && next && this.store.claimDelivery) await this.store.claimDelivery(id, this.shared.node, Date.parse(next) + this.shared.claimMs);
    await this.store.putDelivery(updated);
    try {
      await this.store.flush();
    } catch (error) {
      // The record is in the store's memory, so this process will not resend; only a crash before
      // the next successful flush could.
      this.log.error('webhook delivery state not flushed', { delivery: id, error: String(error) });
    }

    const fields = { delivery: id, conversion: record.conversion_id, attempt: attempts.length, status_code: attempt.status_code, error: attempt.error };
    if (success) this.log.info('webhook delivered', fields);
    else if (status === 'failed' && record.status === 'pending') this.log.warn('webhook delivery failed for good', fields);
    else this.log.info('webhook attempt failed', { ...fields, next_attempt_at: next });

    if (status === 'pending') this.schedule(updated);
    return updated;
  }

  private async send(record: DeliveryRecord, startedMs: number): Promise<SendOutcome> {
    const problem = checkCallbackUrl(record.url, { allowInsecure: this.allowInsecure });
    if (problem !== null) {
      const error = problem === 'https_required' ? 'https_required: callback URL must use https' : 'invalid_url';
      return { statusCode: null, error, durationMs: 0, permanent: true };
    }
    const body = Buffer.from(record.body, 'utf8');
    let signature: string;
    try {
      // Signed at attempt time with the secret of that moment: a rotation applies to later attempts.
      signature = signWebhook(body, await this.secretFor(record.account_id), Math.floor(startedMs / 1000));
    } catch (error) {
      // Unknown account or empty secret: retried like a network failure, in case it is fixed.
      return { statusCode: null, error: `no webhook secret: ${errorMessage(error)}`, durationMs: 0, permanent: false };
    }
    this.transport ??= import('./transport.ts').then(({ WebhookTransport }) => new WebhookTransport(this.transportOptions));
    const outcome = await (await this.transport).post(record.url, body, {
      'content-type': 'application/json',
      'x-service-event': record.event,
      'x-service-delivery': record.id,
      'x-service-signature': signature,
    });
    return { ...outcome, permanent: false };
  }

  private reportBug(id: string, error: unknown): void {
    this.log.error('webhook attempt crashed', { delivery: id, error: errorMessage(error) });
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
