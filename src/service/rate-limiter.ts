export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** Seconds to wait before the next request can pass (Retry-After), when refused. */
  retryAfterSeconds: number;
}

/** Requests per minute per account: in this process, or (several nodes) in the shared database. */
export interface RateLimiter {
  take(key: string, limit: number): RateDecision | Promise<RateDecision>;
  /** `take` where it answers at once (buckets in this process); absent where it asks elsewhere (the database). */
  takeNow?(key: string, limit: number): RateDecision;
}

/** The decision for a bucket left with `tokens` after the request (taken one if `allowed`). */
export function decisionOf(limit: number, tokens: number, allowed: boolean): RateDecision {
  const perMs = limit / 60_000;
  return {
    allowed,
    limit,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.ceil((limit - tokens) / perMs / 1000),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)),
  };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Requests per minute as a token bucket per account: `limit` tokens, refilled evenly over a
 * minute. Bursts up to the limit pass; a steady rate above it is refused with an exact wait.
 */
export class RequestRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = Date.now) {}

  take(key: string, limit: number): RateDecision {
    return this.takeNow(key, limit);
  }

  takeNow(key: string, limit: number): RateDecision {
    const now = this.now();
    const perMs = limit / 60_000;
    const bucket = this.buckets.get(key) ?? { tokens: limit, updatedAt: now };
    bucket.tokens = Math.min(limit, bucket.tokens + (now - bucket.updatedAt) * perMs);
    bucket.updatedAt = now;
    this.buckets.set(key, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return decisionOf(limit, bucket.tokens, allowed);
  }
}
