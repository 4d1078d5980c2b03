import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openStore, type StorePlace } from '../../src/service/open-store.ts';
import { storeServices } from '../../src/service/store-services.ts';
import { WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import { acquireDataDirLock, DataDirLockedError, lockOwner } from '../../src/store/data-dir-lock.ts';
import type { Store } from '../../src/store/types.ts';
import { ADMIN_OPERATIONS, AdminError, REDELIVER } from './operations.ts';
import { callAdminSocket } from './socket.ts';

/** What to do when the data dir looked in is not the daemon's. */
const DATA_DIR_HINT = 'a daemon started with another data dir keeps its accounts there: name it with --data-dir DIR, CONVD_DATA_DIR=DIR or --config FILE';

/**
 * Runs an admin operation where the store is: on the PostgreSQL database when one is named (a
 * redelivery excepted: only a daemon's delivery worker sends, so it goes through its socket
 * whatever the store), else in the data dir.
 */
export function runAdmin(place: StorePlace, op: string, args: Record<string, unknown>): Promise<unknown> {
  return place.databaseUrl && op !== REDELIVER ? runAdminOnDatabase(place, op, args) : runAdminOperation(place.dataDir, op, args);
}

/**
 * Runs an admin operation through the running daemon's socket, or straight on the store when no
 * daemon holds the data dir (taking the lock meanwhile, so the JSON files never have two writers).
 * It never creates a data dir: one that no daemon ever used is almost always the wrong one (the
 * default, where the daemon was started with another), and an empty store made there would only
 * answer "no account" and leave a stray directory behind.
 */
async function runAdminOperation(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  try {
    return await runIn(dataDir, op, args);
  } catch (error) {
    // "no account acc_…": say where it was looked for.
    if (error instanceof AdminError && error.exitCode === 4) throw new AdminError(`${error.message} in the data dir ${dataDir} (${DATA_DIR_HINT})`, 4);
    throw error;
  }
}

async function runIn(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  if (await lockOwner(dataDir)) return callAdminSocket(dataDir, op, args);
  // Whatever the store: only a daemon's delivery worker sends, so without one there is nothing to open.
  if (op === REDELIVER) throw new AdminError(`redelivery is sent by the running daemon, and none runs with the data dir ${dataDir}: start convd, or name its data dir with --data-dir`, 1);
  if (!existsSync(join(dataDir, 'store'))) {
    throw new AdminError(`no convd data dir at ${dataDir} (no daemon has run with it): ${DATA_DIR_HINT}`, 4);
  }
  let release: () => Promise<void>;
  try {
    release = await acquireDataDirLock(dataDir);
  } catch (error) {
    // A daemon started between the check and the lock: go through it after all.
    if (error instanceof DataDirLockedError) return callAdminSocket(dataDir, op, args);
    throw error;
  }
  const { store } = await openStore({ dataDir }, { role: 'command' });
  try {
    return await runOn(store, op, args);
  } finally {
    await store.close();
    await release();
  }
}

/**
 * Runs an admin operation on the PostgreSQL database the daemons share, from any machine that
 * reaches it: every daemon reads accounts, keys and settings from it at each request, so a
 * revoked key or the maintenance switch holds on all of them at once.
 */
async function runAdminOnDatabase(place: StorePlace, op: string, args: Record<string, unknown>): Promise<unknown> {
  const { store } = await openStore(place, { role: 'command' }).catch((error: unknown) => {
    throw new AdminError(`cannot open the database: ${error instanceof Error ? error.message : String(error)}`, 1);
  });
  try {
    return await runOn(store, op, args);
  } finally {
    await store.close();
  }
}

async function runOn(store: Store, op: string, args: Record<string, unknown>): Promise<unknown> {
  const config = defaultServiceConfig();
  const operation = ADMIN_OPERATIONS[op];
  if (!operation) throw new AdminError(`unknown operation ${op}`, 2);
  const services = storeServices(store, config);
  return operation({ ...services, signIn: new WebSignIn(store, services.accounts), config }, args);
}
