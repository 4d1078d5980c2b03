import type { ConversionRecord } from '../../model/conversion.ts';
import { END_STATUSES } from '../../model/status.ts';

/**
 * Conversions that have ended, kept for a second by the process: a client that reads a finished
 * conversion again and again (a dashboard, a script polling a list it already has) then costs no
 * round trip to the database. Only ended records are kept: a queued or running one changes with
 * every step of a worker on any node. An ended one changes only by a delete or an expiry
 * (succeeded -> expired) and by the engine time a cancel records; this process's own writes drop
 * the entry at once, another node's arrive as a notification (PeerSignals), and a notification
 * lost with a dropped connection is covered by the second: the same bound as a revoked key.
 * A succeeded record is never served past its result's expiry, so the service's own expiry on
 * read sees it as due.
 */
export class EndedRecords {
  private readonly entries = new Map<string, { until: number; record: ConversionRecord }>();
  /** Bumped by every drop: a load that started before a drop may carry what the write replaced, and is then not kept. */
  private generation = 0;

  constructor(private readonly ttlMs = 1000, private readonly maxEntries = 10_000) {}

  async get(id: string, load: () => Promise<ConversionRecord | undefined>): Promise<ConversionRecord | undefined> {
    const now = Date.now();
    const hit = this.entries.get(id);
    // A shallow copy, as the lowdb store hands out: callers replace a record's fields, never
    // change what is inside one, and the public JSON's cache knows an unchanged record by them.
    if (hit && hit.until > now) return { ...hit.record };
    const started = this.generation;
    const record = await load();
    if (!record || !END_STATUSES.has(record.status) || started !== this.generation) return record;
    const until = Math.min(now + this.ttlMs, record.status === 'succeeded' && record.result ? Date.parse(record.result.expires_at) : Infinity);
    if (!(until > now)) return record;
    // A full cache starts over rather than growing: a second's worth of reads is all it is for.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(id, { until, record });
    return { ...record };
  }

  forget(id: string): void {
    this.generation++;
    this.entries.delete(id);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
