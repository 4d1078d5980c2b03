/**
 * Writes accounts, keys and history straight into a data dir's store before the daemon starts,
 * through the store's own code (LowdbStore + AccountService), so the files are exactly the
 * daemon's format.
 */
import { join } from 'node:path';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { PlanId } from '../../src/model/plan.ts';
import { AccountService } from '../../src/service/accounts.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { newConversionId } from '../../src/model/ids.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import type { Store } from '../../src/store/types.ts';

export interface SeededAccount {
  accountId: string;
  apiKey: string;
}

export async function seedAccounts(dataDir: string, count: number, plan: PlanId): Promise<SeededAccount[]> {
  const store = await LowdbStore.open({ dir: join(dataDir, 'store') });
  try {
    return await seedAccountsIn(store, Array.from({ length: count }, () => plan));
  } finally {
    await store.close();
  }
}

/** One account of each plan, with a key of every scope, made by the service's own code in `store`. */
export async function seedAccountsIn(store: Store, plans: readonly PlanId[]): Promise<SeededAccount[]> {
  const accounts = new AccountService(store, defaultServiceConfig());
  const seeded: SeededAccount[] = [];
  for (const [i, plan] of plans.entries()) {
    const account = await accounts.createAccount({ plan, name: `bench-${i}` });
    const { key } = await accounts.createKey(account.id, ['read', 'convert', 'delete']);
    seeded.push({ accountId: account.id, apiKey: key });
  }
  return seeded;
}

const DAY = 86_400_000;

/**
 * `count` ended conversions of one account, spread over the last `days` days, oldest first:
 * mostly results that expired after their 24 h, some failures. Nothing is due for expiry or
 * pruning, so the daemon starts with the whole history in place. `numberedFrom`: where this
 * batch's record numbers (in names, digests, idempotency keys) start, after an earlier batch's.
 */
export async function seedHistory(dataDir: string, accountId: string, count: number, days = 25, numberedFrom = 0): Promise<void> {
  const store = await LowdbStore.open({ dir: join(dataDir, 'store') });
  try {
    const now = Date.now();
    const first = now - days * DAY;
    const step = (days * DAY - DAY) / count;
    for (let i = 0; i < count; i++) {
      const created = first + i * step;
      // Names, digests and keys numbered on from an earlier batch's: no two records share one.
      const n = numberedFrom + i;
      const finished = created + 800;
      const failed = n % 10 === 0;
      const record: ConversionRecord = {
        id: newConversionId(created),
        account_id: accountId,
        status: failed ? 'failed' : 'expired',
        source: 'png',
        target: n % 3 === 0 ? 'avif' : 'webp',
        variant: null,
        options: { quality: 80 },
        original_name: `photo-${n}.png`,
        input_size: 180_000 + (n % 1000) * 37,
        input: { kind: 'file', sha256: (n.toString(16).padStart(8, '0')).repeat(8) },
        progress: failed ? 0 : 100,
        reserved_credits: 0,
        credits: 0,
        charged_at: null,
        created_at: new Date(created).toISOString(),
        started_at: new Date(created + 100).toISOString(),
        finished_at: new Date(finished).toISOString(),
        result: failed ? null : { filename: `photo-${n}.webp`, size: 52_000 + (n % 500) * 11, mime: 'image/webp', expires_at: new Date(finished + DAY).toISOString() },
        error: failed ? { code: 'input_invalid', message: 'The input cannot be decoded as png: corrupt header' } : null,
        callback_url: null,
        idempotency_key: n % 4 === 0 ? `seed-${n}` : null,
        request_fingerprint: n % 4 === 0 ? `fp-${n}` : null,
      };
      await store.insertConversion(record);
    }
  } finally {
    await store.close();
  }
}
