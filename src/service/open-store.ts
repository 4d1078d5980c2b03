import { join } from 'node:path';
import { LowdbStore } from '../store/lowdb-store.ts';
import type { PostgresStore } from '../store/postgres/postgres-store.ts';

/**
 * Where the configuration keeps the store: the PostgreSQL database when it names one (the data dir
 * then holds only files), else the lowdb files under the data dir. The daemon and every admin
 * command decide it this one way.
 */
export interface StorePlace {
  dataDir: string;
  databaseUrl?: string | null;
  /** lowdb in memory only, gone with the process (the CLI's in-process runs). */
  ephemeral?: boolean;
}

/**
 * Who opens the store, which decides its hold on a database (lowdb's files are held by the data
 * dir's lock, which the caller takes):
 * - `daemon`: holds the database's node lock for as long as it runs, shared by the nodes of a
 *   cluster (`cluster`: with a bucket), alone otherwise; told when the lock's connection is lost.
 * - `command`: an admin command, beside running daemons: no node lock, two connections.
 * - `import`: `convd store import`, which must not write under a running daemon: the node lock
 *   alone (refused while any daemon runs), two connections.
 */
export type StoreHolder =
  | { role: 'daemon'; cluster: boolean; onConnectionLost?: (error: Error) => void }
  | { role: 'command' }
  | { role: 'import' };

/** The store opened; `database` is the same store when it is PostgreSQL (its queue and shared buckets need it). */
export type OpenedStore = { store: PostgresStore; database: PostgresStore } | { store: LowdbStore; database: null };

/** Connections of a command's short session with the database. */
const COMMAND_POOL_SIZE = 2;

/** Opens the store `place` names for `holder` (PostgreSQL's driver is loaded only then). */
export async function openStore(place: StorePlace, holder: StoreHolder): Promise<OpenedStore> {
  if (place.databaseUrl) {
    const { PostgresStore } = await import('../store/postgres/postgres-store.ts');
    const store = await PostgresStore.open(holder.role === 'daemon'
      ? { url: place.databaseUrl, nodeLock: holder.cluster ? 'cluster' : 'sole', onConnectionLost: holder.onConnectionLost }
      : { url: place.databaseUrl, poolSize: COMMAND_POOL_SIZE, ...(holder.role === 'import' ? { nodeLock: 'sole' as const } : {}) });
    return { store, database: store };
  }
  const store = await LowdbStore.open({ dir: place.ephemeral ? null : join(place.dataDir, 'store') });
  return { store, database: null };
}
