/**
 * The retry schedule: the first attempt at once, then waits of 1, 5, 15, 30 and 40
 * minutes between attempts (91 minutes in all, "about an hour and a half" as the spec says), each
 * wait with at most ±10 % jitter so that many deliveries failing together do not retry together.
 */

const MINUTE_MS = 60_000;

/** Waits before attempts 2..6, unscaled and without jitter. */
export const RETRY_WAITS_MS: readonly number[] = Object.freeze([1, 5, 15, 30, 40].map((m) => m * MINUTE_MS));

/** The first attempt plus one per wait. */
export const MAX_ATTEMPTS = RETRY_WAITS_MS.length + 1;

export const JITTER_FRACTION = 0.1;

export interface ScheduleOptions {
  /** Multiplies every wait; tests shrink the 91 minutes with e.g. 0.001 (5.5 s). Default 1. */
  scale?: number;
  /** Uniform in [0, 1), like Math.random (the default); injectable so tests can pin the jitter. */
  random?: () => number;
}

/**
 * The wait after the `attemptsMade`-th attempt failed, in ms, or null when that was the last one
 * and the delivery has failed for good.
 */
export function nextRetryDelayMs(attemptsMade: number, options: ScheduleOptions = {}): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) {
    throw new RangeError('attemptsMade must be an integer >= 1');
  }
  if (attemptsMade >= MAX_ATTEMPTS) return null;
  const scale = options.scale ?? 1;
  if (!Number.isFinite(scale) || scale <= 0) throw new RangeError('scale must be a positive number');
  const random = options.random ?? Math.random;
  // Map [0, 1) onto [-10 %, +10 %).
  const jitter = (random() * 2 - 1) * JITTER_FRACTION;
  return Math.round(RETRY_WAITS_MS[attemptsMade - 1] * scale * (1 + jitter));
}
