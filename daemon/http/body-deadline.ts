import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../src/errors/api-error.ts';

/** How long a request body may take (settings `upload_idle_timeout` and `request_timeout`). */
export interface BodyTimeouts {
  /** No byte of the body for this long: the client stalled. */
  idleMs: number;
  /** The whole body must have arrived within this long. */
  totalMs: number;
}

export const DEFAULT_BODY_TIMEOUTS: BodyTimeouts = { idleMs: 30_000, totalMs: 3_600_000 };

/** 408 request_timeout; the connection is closed after it (a stalled client is not waited for). */
function timeoutError(limit: 'upload_idle_timeout' | 'request_timeout', ms: number): ApiError {
  const seconds = Math.round(ms / 100) / 10;
  return new ApiError('request_timeout', {
    params: { seconds, reason: limit },
    details: { limit, seconds },
    headers: { connection: 'close' },
  });
}

export interface BodyWatch {
  /** Aborted with the 408 ApiError when the body stalls or runs out of time. */
  signal: AbortSignal;
  stop(): void;
}

/**
 * Watches a request body while it is read: aborts when no byte arrived for `idleMs`, or when it
 * is not complete after `totalMs`. Bytes that arrived but are not read yet (the body waits for
 * the disk: backpressure) mean the wait is ours, not the client's, and do not count as a stall.
 */
export function watchBody(req: IncomingMessage, timeouts: BodyTimeouts): BodyWatch {
  const controller = new AbortController();
  const cut = (error: ApiError) => {
    stop();
    // Received to the last byte: whatever takes time now is ours.
    if (!req.complete) controller.abort(error);
  };
  const idle = setTimeout(() => {
    if (req.readableFlowing === false || req.readableLength > 0) idle.refresh();
    else cut(timeoutError('upload_idle_timeout', timeouts.idleMs));
  }, timeouts.idleMs);
  const total = setTimeout(() => cut(timeoutError('request_timeout', timeouts.totalMs)), timeouts.totalMs);
  idle.unref();
  total.unref();
  const onData = () => idle.refresh();
  const stop = () => {
    clearTimeout(idle);
    clearTimeout(total);
    req.off('data', onData);
    req.off('end', stop);
  };
  req.on('data', onData);
  req.once('end', stop);
  return { signal: controller.signal, stop };
}
