import type pg from 'pg';
import type { Queryable } from './sql.ts';

/**
 * LISTEN/NOTIFY: how the nodes of one database tell each other of new work, an end, a cancel
 * (PostgresJobSource, PeerSignals). A message is not logged: one lost with a dropped connection
 * is covered by its listener's own look every few seconds.
 */
export class Notifications {
  constructor(
    /** The pool a listener's connection comes from; null inside a transaction (LISTEN holds a session). */
    private readonly pool: pg.Pool | null,
    /** Where NOTIFY goes: the relaxed pool, or the transaction's connection. */
    private readonly relaxed: Queryable,
  ) {}

  /** Sends `payload` to every listener of `channel` (all nodes), once the current transaction commits. */
  async notify(channel: string, payload: string): Promise<void> {
    // pg_notify gives its transaction an id, so its commit would wait for a WAL flush: the
    // message needs none (it is not logged), and is sent at the commit all the same.
    await this.relaxed.query({ name: 'convd-notify', text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });
  }

  /**
   * Listens on `channel` with a connection of its own (LISTEN holds a session); `onLost` is told
   * when that connection drops. Resolves to a function that stops listening.
   */
  async listen(channel: string, onMessage: (payload: string) => void, onLost: (error: Error) => void): Promise<() => Promise<void>> {
    if (!this.pool) throw new Error('listen needs the store itself, not a transaction');
    // An identifier, not a value (LISTEN takes no parameter): the channels are convd's own
    // constants, and nothing but lower-case letters and underscores is accepted.
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    const client = await this.pool.connect();
    client.on('error', onLost);
    client.on('notification', (message) => {
      if (message.channel === channel) onMessage(message.payload ?? '');
    });
    await client.query(`LISTEN ${channel}`);
    return async () => {
      await client.query(`UNLISTEN ${channel}`).catch(() => undefined);
      client.off('error', onLost);
      client.release();
    };
  }
}
