import type pg from 'pg';
import { LOCK_KEY, type Queryable } from './sql.ts';

/** Takes the transaction's advisory lock on a key (within the schema's name, see LOCK_KEY). */
const LOCK_SQL = `SELECT pg_advisory_xact_lock(${LOCK_KEY})`;

/** Takes `key`'s lock in the transaction `db` is already in (it is re-entrant). */
export async function lockInTransaction(db: Queryable, key: string): Promise<void> {
  await db.query({ name: 'convd-lock', text: LOCK_SQL, values: [key] });
}

/**
 * Runs `work` in a transaction of its own on a connection of `pool`, holding `key`'s advisory
 * lock until it commits or rolls back; what `work` pushes onto `committed` runs once it has
 * committed (dropped if it rolls back). `deferred`: the commit does not wait for the WAL's flush.
 */
export async function inLockedTransaction<T>(
  pool: pg.Pool,
  key: string,
  deferred: boolean,
  work: (client: pg.PoolClient, committed: (() => void)[]) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // Checked out, the client has no listener of the pool's: a connection dropped mid-transaction
  // fails the query in flight, and must not also be thrown as an uncaught 'error'.
  const onError = () => undefined;
  client.on('error', onError);
  let broken = false;
  try {
    await client.query('BEGIN');
    // A step nobody is told about commits without waiting for the WAL (as the relaxed pool's
    // do), on a connection of the main pool: the small relaxed pool takes single statements only.
    if (deferred) await client.query('SET LOCAL synchronous_commit TO off');
    await lockInTransaction(client, key);
    const committed: (() => void)[] = [];
    const result = await work(client, committed);
    await client.query('COMMIT');
    for (const callback of committed) callback();
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
