import type { PostgresStore } from '../store/postgres/postgres-store.ts';
import type { FailureBuckets } from './failure-buckets.ts';
import { decisionOf, type RateDecision, type RateLimiter } from './rate-limiter.ts';

/** A batch is this share of the limit: 1/20 of it, at least one token, at most RATE_BATCH_MAX. */
const BATCH_SHARE = 20;
export const RATE_BATCH_MAX = 50;

/** The tokens of a key's bucket a node takes at once: one below 40 a minute, then a twentieth. */
export function rateBatch(limit: number): number {
  return Math.max(1, Math.min(RATE_BATCH_MAX, Math.floor(limit / BATCH_SHARE)));
}

/** What a node holds of a key's bucket. */
interface Held {
  limit: number;
  /** Tokens taken from the database and not spent yet. */
  tokens: number;
  /** What the database's bucket held after the batch was taken, and when (ms). */
  left: number;
  at: number;
  /** Unspent tokens are dropped at this instant (ms). */
  until: number;
  /** The bucket held no whole token: every request is refused here, without asking, until then (ms). */
  refusedUntil: number;
}

/**
 * Requests per minute counted where every node sees them: the same
 * token bucket as RequestRateLimiter, kept in the database, so a client spreading its requests
 * over the nodes gets the plan's rate, not the rate times the nodes. A node takes a key's tokens
 * a batch at a time (`rateBatch`) and spends them itself, so a busy key costs one write per batch
 * rather than per request; and once the bucket is empty it refuses by itself until the bucket
 * holds a token again (only time refills it), so a flood of refused requests costs nothing there.
 *
 * The tolerance is a batch per node: tokens a node took and has not spent are missing on the
 * other nodes (a client that moves to another node may be refused up to a batch early), and are
 * dropped after the time the bucket takes to refill a batch (a client coming back within it may
 * get up to a batch more than a full bucket). With limits under 40 a minute a batch is one token:
 * exact, as before.
 */
export class SharedRateLimiter implements RateLimiter {
  private readonly held = new Map<string, Held>();
  /** A key's batch on its way from the database: requests for it meanwhile wait for it. */
  private readonly taking = new Map<string, Promise<void>>();

  constructor(private readonly database: PostgresStore, private readonly now: () => number = Date.now) {}

  async take(key: string, limit: number): Promise<RateDecision> {
    for (;;) {
      const decided = this.fromHeld(key, limit);
      if (decided) return decided;
      const inFlight = this.taking.get(key);
      if (inFlight) {
        await inFlight;
        continue;
      }
      const batch = this.takeBatch(key, limit).finally(() => this.taking.delete(key));
      this.taking.set(key, batch);
      await batch;
    }
  }

  /** Decided by what this node holds: a token spent, a refusal still in force; or null (ask). */
  private fromHeld(key: string, limit: number): RateDecision | null {
    const held = this.held.get(key);
    const now = this.now();
    if (!held || held.limit !== limit) return null;
    // What the bucket holds by now, as far as this node knows: refilled since, less what others took.
    if (held.refusedUntil > now) return decisionOf(limit, held.left + (now - held.at) * limit / 60_000, false);
    if (held.tokens >= 1 && held.until > now) {
      held.tokens -= 1;
      return decisionOf(limit, held.left + held.tokens, true);
    }
    return null;
  }

  private async takeBatch(key: string, limit: number): Promise<void> {
    const want = rateBatch(limit);
    const { tokens, taken } = await this.database.rateBuckets.takeRateTokens(key, limit, want);
    const now = this.now();
    this.held.set(key, {
      limit, tokens: taken, left: tokens, at: now,
      until: now + this.refillMs(limit, want),
      refusedUntil: taken >= 1 ? 0 : now + this.refillMs(limit, 1 - tokens),
    });
    // Keys come and go (accounts, addresses): those with nothing held are forgotten now and then.
    if (this.held.size > 10_000) {
      for (const [other, held] of this.held) if (held.until <= now && held.refusedUntil <= now) this.held.delete(other);
    }
  }

  /** How long the bucket takes to refill `tokens` (ms). */
  private refillMs(limit: number, tokens: number): number {
    return limit > 0 ? Math.max(0, tokens) * 60_000 / limit : Infinity;
  }
}

/** Failed attempts (sign-ins) counted in the same buckets every node shares, under keys of their own. */
export class SharedFailureBuckets implements FailureBuckets {
  constructor(private readonly database: PostgresStore) {}

  async take(key: string, perMinute: number): Promise<number | null> {
    if (perMinute <= 0) return null;
    const { tokens, allowed } = await this.database.rateBuckets.takeRateToken(key, perMinute);
    return allowed ? null : decisionOf(perMinute, tokens, allowed).retryAfterSeconds;
  }

  async giveBack(key: string, perMinute: number): Promise<void> {
    if (perMinute > 0) await this.database.rateBuckets.returnRateToken(key, perMinute);
  }
}
