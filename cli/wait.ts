import { setTimeout as sleep } from 'node:timers/promises';
import type { ConvClient } from '../src/client/types.ts';
import type { PublicConversion } from '../src/model/conversion.ts';
import { END_STATUSES } from '../src/model/status.ts';

/** The API holds a request at most this long (`wait`). */
export const MAX_API_WAIT_SECONDS = 30;

export interface WaitOptions {
  /** Absolute time (ms) to give up at; Infinity waits for ever. */
  deadline: number;
  /**
   * Longest `wait` per request: 30 when nobody watches, short when a progress bar wants fresh
   * numbers (the server answers a held request only at the end state).
   */
  pollSeconds: number;
  onUpdate?: (conversion: PublicConversion) => void;
  now?: () => number;
}

export function isFinished(conversion: PublicConversion): boolean {
  return END_STATUSES.has(conversion.status);
}

/** Seconds of `wait` for the next request, never past the deadline (rounded up, at least 1). */
export function nextWait(deadline: number, pollSeconds: number, now: number): number {
  if (deadline === Infinity) return pollSeconds;
  return Math.max(1, Math.min(pollSeconds, Math.ceil((deadline - now) / 1000)));
}

/**
 * Repeats `GET /conversions/{id}?wait=N` until the conversion reaches an end state or the
 * deadline passes; this is how the CLI waits longer than the API's 30 s.
 */
export async function waitForEnd(
  client: ConvClient,
  conversion: PublicConversion,
  options: WaitOptions,
): Promise<{ conversion: PublicConversion; timedOut: boolean }> {
  const now = options.now ?? Date.now;
  let current = conversion;
  while (!isFinished(current)) {
    if (now() >= options.deadline) return { conversion: current, timedOut: true };
    const started = now();
    const wait = nextWait(options.deadline, options.pollSeconds, started);
    current = await client.getConversion(current.id, { wait });
    options.onUpdate?.(current);
    // A server that ignores `wait` answers at once: pace the polling rather than spin.
    const elapsed = now() - started;
    if (!isFinished(current) && elapsed < 500) {
      const remaining = options.deadline - now();
      if (remaining > 0) await sleep(Math.min(1000 - elapsed, remaining));
    }
  }
  return { conversion: current, timedOut: false };
}
