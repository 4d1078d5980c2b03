import type { PostgresStore } from '../store/postgres/postgres-store.ts';
import type { FailureBuckets } from './failure-buckets.ts';
import { decisionOf, type RateDecision, type RateLimiter } from './rate-limiter.ts';

/**
 * Requests per minute counted where every node sees them (DESIGN.md, "Scale-out"): the same
 * token bucket as RequestRateLimiter, kept in the database. A client spreading its requests over
 * the nodes gets the plan's rate, not the rate times the nodes.
 */
export class SharedRateLimiter implements RateLimiter {
  constructor(private readonly database: PostgresStore) {}

  async take(key: string, limit: number): Promise<RateDecision> {
    const { tokens, allowed } = await this.database.takeRateToken(key, limit);
    return decisionOf(limit, tokens, allowed);
  }
}

/** Failed attempts (sign-ins) counted in the same buckets every node shares, under keys of their own. */
export class SharedFailureBuckets implements FailureBuckets {
  constructor(private readonly database: PostgresStore) {}

  async take(key: string, perMinute: number): Promise<number | null> {
    if (perMinute <= 0) return null;
    const { tokens, allowed } = await this.database.takeRateToken(key, perMinute);
    return allowed ? null : decisionOf(perMinute, tokens, allowed).retryAfterSeconds;
  }

  async giveBack(key: string, perMinute: number): Promise<void> {
    if (perMinute > 0) await this.database.returnRateToken(key, perMinute);
  }
}
