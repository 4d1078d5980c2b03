import { officeRetries } from '../../src/engines/office/retries.ts';
import { ACTIVE_STATUSES } from '../../src/model/status.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import type { DiskSpace } from './disk-space.ts';
import { DaemonMetrics } from './metrics.ts';
import type { EngineOf } from './conversion-observer.ts';

/**
 * How often a node of a cluster counts the bytes of downloadable results again (convd_results_bytes):
 * a sum over the succeeded rows, so not at every scrape.
 */
const RESULTS_RECOUNT_MS = 5 * 60_000;

/** The engine of a conversion's pair in the system's registry (`none` when it has none). */
export function engineOfSystem(system: ConversionSystem): EngineOf {
  // A chain an option adds (OCR) is the chain's: the engine label says which pair ran.
  return (record) => system.registry.pairFor(record.source, record.target, record.options ?? {})?.engine ?? 'none';
}

/** The daemon's metrics, their gauges read from the running system and the disk. */
export function metricsOfSystem(system: ConversionSystem, options: { version: string; workers: number; disk: DiskSpace }): DaemonMetrics {
  const engineOf = engineOfSystem(system);
  return new DaemonMetrics({
    version: options.version,
    workers: options.workers,
    engines: system.registry.statuses.filter((s) => s.available).map((s) => s.name),
    queueDepth: () => system.queue.size,
    leasesHeld: () => system.queue.leasesHeld ?? null,
    async runningEngines() {
      const records = await Promise.all(system.pool.activeIds().map((id) => system.store.getConversion(id)));
      // A worker lets go of a conversion a moment after it ended (its files are tidied first):
      // an ended one is not running, whatever the pool still holds.
      return records.filter((r): r is NonNullable<typeof r> => r !== undefined && ACTIVE_STATUSES.has(r.status)).map((r) => engineOf(r));
    },
    diskFreeBytes: () => options.disk.free,
    officeRetries,
  });
}

/**
 * Counts the bytes of downloadable results now, and on a cluster with its files in a bucket again
 * every few minutes (other nodes' results come and go there too: this node's transitions alone
 * drift). Returns the timer to clear at stop, or null.
 */
export async function countResultBytes(system: ConversionSystem, metrics: DaemonMetrics, cluster: boolean): Promise<NodeJS.Timeout | null> {
  metrics.setResultsBytes(await system.store.resultBytes());
  if (!cluster) return null;
  const recount = setInterval(() => void system.store.resultBytes().then((bytes) => metrics.setResultsBytes(bytes), () => undefined), RESULTS_RECOUNT_MS);
  recount.unref();
  return recount;
}
