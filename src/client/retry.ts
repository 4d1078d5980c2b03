/**
 * When the HTTP client may repeat a request, and how long it waits first. Kept apart from the
 * transport so the rules can be read (and tested) on their own.
 *
 * - `safe`: reads, and creates that carry an Idempotency-Key (the server returns the original
 *   conversion for a repeat, so nothing runs or is charged twice). Retried after network errors,
 *   429, 502, 503 and 504.
 * - `unsafe`: DELETE. A repeat after the server acted would answer 409 for a cancel that worked,
 *   so only answers that prove nothing happened (429, 503) and connections that were never made
 *   are retried.
 * - `once`: a body that cannot be replayed (an upload read from a pipe). Never retried.
 */
export type RetryClass = 'safe' | 'unsafe' | 'once';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** A `Retry-After` longer than this is not waited for: the error goes to the caller instead. */
  maxRetryAfterMs: number;
  /** First backoff step when the server gives no `Retry-After`; doubled per attempt, capped. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retries: 3,
  maxRetryAfterMs: 60_000,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
};

/** Failures before any byte reached the server: repeating them is safe for every method. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** Failures that may have happened after the server received the request. */
const MAYBE_SENT = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'ERR_GOT_REQUEST_ERROR']);

/** What went wrong on one attempt, as far as retrying is concerned. */
export type AttemptFailure =
  | { kind: 'status'; status: number; retryAfterMs: number | null }
  | { kind: 'network'; code: string };

/**
 * The delay before the next attempt, or null to give up. `attempt` counts from 1 (the attempt
 * that just failed).
 */
export function retryDelay(
  failure: AttemptFailure,
  retryClass: RetryClass,
  attempt: number,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  random: () => number = Math.random,
): number | null {
  if (retryClass === 'once' || attempt > policy.retries) return null;
  const backoff = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
  // Up to 25 % jitter so that many clients throttled at once do not return in lockstep.
  const jittered = Math.round(backoff * (1 + random() * 0.25));

  if (failure.kind === 'network') {
    if (NOT_CONNECTED.has(failure.code)) return jittered;
    if (retryClass === 'safe' && MAYBE_SENT.has(failure.code)) return jittered;
    return null;
  }

  const retryable = retryClass === 'safe' ? [429, 502, 503, 504] : [429, 503];
  if (!retryable.includes(failure.status)) return null;
  if (failure.retryAfterMs !== null) {
    return failure.retryAfterMs <= policy.maxRetryAfterMs ? failure.retryAfterMs : null;
  }
  // 502/504 from a proxy, or a 429 without Retry-After (concurrency_limit): back off.
  return jittered;
}

/** `Retry-After` as delta-seconds or an HTTP date (RFC 9110 10.2.3), in milliseconds; null if absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
