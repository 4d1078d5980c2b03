import pg from 'pg';
import { reasonOf, StoreUnavailableError } from '../unavailable.ts';
import { migrate } from './migrate.ts';
import { NodeLock, type NodeLockMode } from './node-lock.ts';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (libpq's parameters, e.g. `?options=-c search_path=x`). */
  url: string;
  /** Connections of this process (default 10). */
  poolSize?: number;
  /**
   * The node lock this process holds for as long as the store is open (see NodeLockMode); none
   * for the admin commands, which may run beside daemons.
   */
  nodeLock?: NodeLockMode;
  /** The node lock's connection was lost (the database restarted or dropped it): the lock is gone too. */
  onConnectionLost?: (error: Error) => void;
}

/** What an open store runs on. */
export interface Connections {
  pool: pg.Pool;
  /**
   * Connections whose commits do not wait for the WAL's flush (synchronous_commit off), for
   * single statements nobody is told about (UpdateOptions.deferred): progress, claims, lease
   * releases, NOTIFY. Such a commit is visible at once and on disk within a fraction of a
   * second; only a crash of the database server in between loses it, and each of them is redone
   * then (a queued conversion is claimed again, a lease renewed).
   */
  relaxed: pg.Pool;
  nodeLock: NodeLock | null;
}

/** Connections of the relaxed pool: single short statements (progress, claims, releases, NOTIFY). */
const RELAXED_POOL_SIZE = 3;

/** Connects, takes the node lock if asked, applies the schema's missing steps. */
export async function connect(options: PostgresStoreOptions): Promise<Connections> {
  // A pool that cannot hand out a connection within 10 s fails the request rather than hangs it.
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, application_name: 'convd', connectionTimeoutMillis: 10_000 });
  const relaxed = new pg.Pool({
    connectionString: options.url, max: RELAXED_POOL_SIZE, application_name: 'convd', connectionTimeoutMillis: 10_000,
    options: '-c synchronous_commit=off',
  });
  // An idle connection the server drops (restart, network) must not take the process down.
  pool.on('error', () => undefined);
  relaxed.on('error', () => undefined);
  let nodeLock: NodeLock | null = null;
  try {
    // Not reached at all (refused, unknown host, password, no such database): one line naming where.
    await pool.query('SELECT 1').catch((error: unknown) => {
      throw new StoreUnavailableError(`cannot use the database at ${describeDatabase(options.url)}: ${reasonOf(error)}`, { cause: error });
    });
    // The node lock first: a newer convd started beside a running one must not change its schema.
    if (options.nodeLock) nodeLock = await NodeLock.take(pool, options.nodeLock, options.onConnectionLost);
    await migrate(pool);
  } catch (error) {
    nodeLock?.abandon();
    await pool.end().catch(() => undefined);
    await relaxed.end().catch(() => undefined);
    throw error;
  }
  return { pool, relaxed, nodeLock };
}

/** Lets go of the node lock, then ends both pools. */
export async function disconnect(connections: Connections): Promise<void> {
  await connections.nodeLock?.release();
  await connections.pool.end();
  await connections.relaxed.end();
}

/** host:port/database of a URL, without user or password, for messages. */
function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  } catch {
    return 'the database';
  }
}
