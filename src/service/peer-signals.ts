import { END_STATUSES } from '../model/status.ts';
import type { WorkerPool } from '../queue/worker-pool.ts';
import type { PostgresStore } from '../store/postgres/postgres-store.ts';
import type { ConversionService } from './conversion-service.ts';
import type { RunnerLog } from './runner.ts';

/** A conversion ended on some node (payload: its id). */
const ENDED = 'convd_ended';
/** A conversion was cancelled on some node while it may run on another (payload: its id). */
const CANCELLED = 'convd_cancel';

/**
 * What the nodes of one database tell each other through LISTEN/NOTIFY:
 * a conversion's end, so that `wait` on any node answers the moment another finishes it; a
 * cancel, so that the node running the conversion stops its engine at once; and a change to an
 * ended conversion (a delete, an expiry), so that no node goes on answering with what it kept of it.
 */
export class PeerSignals {
  private stops: (() => Promise<void>)[] = [];
  private listening = false;

  constructor(
    private readonly database: PostgresStore,
    private readonly conversions: ConversionService,
    private readonly pool: WorkerPool,
    private readonly log: RunnerLog,
  ) {
    conversions.events.subscribe((record) => {
      if (this.listening) void database.notifications.notify(ENDED, record.id).catch(() => undefined);
    });
    conversions.cancelElsewhere = (id) => {
      void database.notifications.notify(CANCELLED, id).catch(() => undefined);
    };
  }

  async start(): Promise<void> {
    const lost = (error: Error) => this.log('peers.listen_lost', { error: error.message });
    this.stops.push(await this.database.notifications.listen(ENDED, (id) => this.ended(id), lost));
    this.stops.push(await this.database.notifications.listen(CANCELLED, (id) => void this.pool.abort(id, 'cancelled'), lost));
    this.stops.push(await this.database.followChanges(lost));
    this.listening = true;
  }

  async stop(): Promise<void> {
    this.listening = false;
    for (const stop of this.stops.splice(0)) await stop();
  }

  /** Another node's end (or this node's own, already told): read only where someone waits for it. */
  private ended(id: string): void {
    if (!this.conversions.events.awaited(id)) return;
    void this.database.getConversion(id).then((record) => {
      if (record && END_STATUSES.has(record.status)) this.conversions.events.wake(record);
    }, () => undefined);
  }
}
