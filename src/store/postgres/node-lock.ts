import type pg from 'pg';
import { StoreUnavailableError } from '../unavailable.ts';
import { LOCK_KEY } from './sql.ts';

/**
 * `sole`: a daemon alone with the database (no bucket: its files are on its own disk, it recovers
 * every running conversion at start and forgets every lease), or `convd store import`, which must
 * not write under a running node; refused while any daemon runs. `cluster`: a node of several on
 * the database and a bucket; any number of them at once, refused while a sole node (or an import)
 * holds the database.
 */
export type NodeLockMode = 'sole' | 'cluster';

/**
 * The advisory lock every daemon holds on a connection of its own for as long as it runs:
 * exclusive for a sole node (and an import), shared for the nodes of a cluster, so that one
 * excludes the other and a sole node excludes everything. Taken within the schema's name
 * (LOCK_KEY): two convd on two schemas of one database are two stores.
 */
const NODE_LOCK = 'convd:node';
const TRY_NODE_LOCK = `SELECT pg_try_advisory_lock(${LOCK_KEY}) AS locked`;
const TRY_NODE_LOCK_SHARED = `SELECT pg_try_advisory_lock_shared(${LOCK_KEY}) AS locked`;
const UNLOCK_NODE_LOCK_SHARED = `SELECT pg_advisory_unlock_shared(${LOCK_KEY})`;

/**
 * Another daemon holds the database: `holder` says what runs there, as far as the lock tells
 * (`sole`: a daemon without a bucket, or an import; `cluster`: nodes of a cluster), `wanted`
 * what was refused.
 */
export class DatabaseInUseError extends StoreUnavailableError {
  constructor(readonly wanted: NodeLockMode, readonly holder: NodeLockMode) {
    super(`another convd daemon uses this database: ${inUseReason(wanted, holder)}`);
    this.name = 'DatabaseInUseError';
  }
}

function inUseReason(wanted: NodeLockMode, holder: NodeLockMode): string {
  if (wanted === 'cluster') {
    return 'a daemon without a bucket (or a `convd store import`) holds it alone; stop it before nodes with a bucket (--blob-url) start on it';
  }
  if (holder === 'cluster') {
    return 'nodes of a cluster (this database and a bucket) run on it; a daemon without the bucket cannot join them (give it the same --blob-url), and nothing that needs the database alone may run beside them';
  }
  return 'a daemon without a bucket (or a `convd store import`) holds it; one such daemon per database (admin commands may run beside it)';
}

/** The node lock, held on a connection checked out of the pool for as long as the store is open. */
export class NodeLock {
  private constructor(private readonly client: pg.PoolClient) {}

  /**
   * Takes the lock in `mode` on a connection of its own, or throws DatabaseInUseError naming
   * what holds it. `onLost`: that connection dropped (the database restarted or dropped it), and
   * the lock with it.
   */
  static async take(pool: pg.Pool, mode: NodeLockMode, onLost?: (error: Error) => void): Promise<NodeLock> {
    const client = await pool.connect();
    // Checked out for good, so the pool's own error listener is off it: a dropped connection
    // (a restart of PostgreSQL, a failover) is said here, not thrown as an uncaught 'error'.
    client.on('error', (error) => onLost?.(error));
    try {
      await lockSession(client, mode);
    } catch (error) {
      client.release();
      throw error;
    }
    return new NodeLock(client);
  }

  /** Gives the connection back as it is, lock and all: for a pool that is ended right after. */
  abandon(): void {
    this.client.release();
  }

  async release(): Promise<void> {
    // Let go of the lock in so many words before the session ends: the server releases a closed
    // session's locks only once its backend has exited, a moment later, and a daemon started
    // right after this one stopped (a restart, a start after `convd store import`) would be
    // refused by the lock that was still there.
    await this.client.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    this.client.release(true);
  }
}

/**
 * Takes the node lock on `client`'s session, exclusive for a sole node and shared for a node of
 * a cluster, or throws DatabaseInUseError naming what holds it. Which of the two holds it is
 * learnt by trying the other mode (a shared lock is granted only while no one holds it
 * exclusively), taken back at once.
 */
async function lockSession(client: pg.PoolClient, mode: NodeLockMode): Promise<void> {
  const locked = async (text: string) => (await client.query<{ locked: boolean }>(text, [NODE_LOCK])).rows[0]?.locked === true;
  if (await locked(mode === 'sole' ? TRY_NODE_LOCK : TRY_NODE_LOCK_SHARED)) return;
  if (mode === 'cluster') throw new DatabaseInUseError(mode, 'sole');
  const shared = await locked(TRY_NODE_LOCK_SHARED);
  if (shared) await client.query(UNLOCK_NODE_LOCK_SHARED, [NODE_LOCK]);
  throw new DatabaseInUseError(mode, shared ? 'cluster' : 'sole');
}
