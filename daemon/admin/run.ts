import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AccountService } from '../../src/service/accounts.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { acquireDataDirLock, DataDirLockedError, lockOwner } from '../../src/store/data-dir-lock.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { ADMIN_OPERATIONS, AdminError } from './operations.ts';
import { callAdminSocket } from './socket.ts';

/**
 * Runs an admin operation through the running daemon's socket, or straight on the store when no
 * daemon holds the data dir (taking the lock meanwhile, so the JSON files never have two writers).
 */
export async function runAdminOperation(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  if (await lockOwner(dataDir)) return callAdminSocket(dataDir, op, args);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  let release: () => Promise<void>;
  try {
    release = await acquireDataDirLock(dataDir);
  } catch (error) {
    // A daemon started between the check and the lock: go through it after all.
    if (error instanceof DataDirLockedError) return callAdminSocket(dataDir, op, args);
    throw error;
  }
  const store = await LowdbStore.open({ dir: join(dataDir, 'store') });
  try {
    const config = defaultServiceConfig();
    const operation = ADMIN_OPERATIONS[op];
    if (!operation) throw new AdminError(`unknown operation ${op}`, 2);
    return await operation({ store, accounts: new AccountService(store, config), config }, args);
  } finally {
    await store.close();
    await release();
  }
}
