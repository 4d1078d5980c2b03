import type { Server } from 'node:http';
import type { ConversionSystem } from '../src/service/system.ts';
import type { Stopping } from './daemon-parts.ts';
import type { HttpServerHandle } from './listen.ts';

/** After the conversions drained, requests still open get this long to end (an upload, a wait being answered). */
const REQUEST_GRACE_MS = 2_000;

/** What a stop closes, besides the system. */
export interface StopParts {
  system: ConversionSystem;
  stopping: Stopping;
  http: HttpServerHandle;
  metricsServer: Server | null;
  adminSocket: { close(): Promise<void> };
  /** The results' recount on a cluster. */
  recount: NodeJS.Timeout | null;
  releaseLock: () => Promise<void>;
}

/**
 * Graceful stop: stops accepting connections and submissions, lets requests in flight and
 * running conversions finish for up to `drainMs`, re-queues what still runs, then flushes.
 */
export async function stopDaemon(parts: StopParts, drainMs: number): Promise<{ finished: number; requeued: number }> {
  const { system, stopping, http } = parts;
  stopping.draining = true;
  if (parts.recount) clearInterval(parts.recount);
  const inFlight = system.pool.activeIds();
  // Stops listening at once; connections still in use end with their answer (Connection: close).
  const httpClosed = http.close(drainMs + REQUEST_GRACE_MS);
  // Once the drain is over no conversion ends any more (what still runs is being stopped and
  // re-queued, which on a loaded box can outlast the HTTP grace): requests waiting for one
  // answer with its state then, not when the pool has stopped.
  const answerWaits = setTimeout(() => stopping.shutdown.abort(), drainMs);
  await system.pool.stop(drainMs);
  clearTimeout(answerWaits);
  stopping.shutdown.abort();
  await httpClosed;
  const { metricsServer } = parts;
  if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
  await parts.adminSocket.close();
  let requeued = 0;
  for (const id of inFlight) if ((await system.store.getConversion(id))?.status === 'queued') requeued++;
  await system.stop(0);
  await parts.releaseLock();
  return { finished: inFlight.length - requeued, requeued };
}
