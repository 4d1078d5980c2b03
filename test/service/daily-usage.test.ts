/**
 * The account page's chart data (src/service/daily-usage.ts): conversions made and credits charged
 * per UTC day over the last 30 days, oldest first, another account's never counted, what is older
 * than the window not counted. On both stores (PostgreSQL: the store's GROUP BY); and on a history
 * of 3,000 conversions over 45 days, the same days as the chart's earlier computation, which read
 * the account's conversions page by page (kept here as the reference).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { dailyUsage, type DayUsage } from '../../src/service/daily-usage.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { conversionIdFloor } from '../../src/model/ids.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { conversion } from '../helpers/store-records.ts';

const NOW = new Date('2026-11-26T15:00:00Z');
const DAY_MS = 86_400_000;
const at = (iso: string) => new Date(iso).toISOString();

/** The chart as it was computed before the stores summed it: the account's conversions read newest first, a page at a time. */
async function pagedUsage(store: Store, accountId: string, now: Date, days = 30): Promise<DayUsage[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (days - 1) * DAY_MS;
  const usage = Array.from({ length: days }, (_, i): DayUsage => ({ day: new Date(first + i * DAY_MS).toISOString().slice(0, 10), conversions: 0, credits: 0 }));
  const slot = (iso: string | null) => {
    if (!iso) return undefined;
    const index = Math.floor((Date.parse(iso) - first) / DAY_MS);
    return index >= 0 && index < days ? usage[index] : undefined;
  };
  let before: string | undefined;
  for (;;) {
    const page = await store.listConversions({ accountId, before, limit: 500 });
    for (const record of page) {
      if (Date.parse(record.created_at) < first) return usage;
      const made = slot(record.created_at);
      if (made) made.conversions++;
      const charged = slot(record.charged_at);
      if (charged) charged.credits += record.credits;
    }
    if (page.length < 500) return usage;
    before = page[page.length - 1]!.id;
  }
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
/**
 * An id made at `ms` as the service makes them, whatever ids were made before (the service's
 * factory is monotonic: once it made an id of a later time, its next ids carry that time).
 */
function idAt(ms: number): string {
  return conversionIdFloor(ms) + Array.from(randomBytes(16), (byte) => CROCKFORD[byte % 32]).join('');
}

/** A small deterministic random source (the same history on every run). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const backends: { name: string; open(): Promise<{ store: Store; close(): Promise<void> }> }[] = [
  {
    name: 'lowdb',
    async open() {
      const store = await LowdbStore.open({ dir: null });
      return { store, close: () => store.close() };
    },
  },
  {
    name: 'postgres',
    async open() {
      const database: TestDatabase = await freshDatabase();
      const store = await PostgresStore.open({ url: database.url, poolSize: 4 });
      return {
        store,
        async close() {
          await store.close();
          await database.drop();
        },
      };
    },
  },
];

for (const backend of backends) {
  describe(`daily usage: ${backend.name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await backend.open());
    });
    after(async () => {
      await close?.();
    });

    it('counts per UTC day over 30 days, credits on the day they were charged', async () => {
      const made = (accountId: string, fields: Parameters<typeof conversion>[1] & { created_at: string }) =>
        conversion(accountId, { ...fields, id: idAt(Date.parse(fields.created_at)) });
      const records = [
        made('acc_a', { created_at: at('2026-10-20T10:00:00Z'), credits: 9, charged_at: at('2026-10-20T10:01:00Z'), status: 'succeeded' }),
        made('acc_a', { created_at: at('2026-10-28T23:59:00Z'), credits: 2, charged_at: at('2026-10-29T00:00:30Z'), status: 'succeeded' }),
        made('acc_a', { created_at: at('2026-11-26T08:00:00Z'), credits: 3, charged_at: at('2026-11-26T08:00:05Z'), status: 'succeeded' }),
        made('acc_a', { created_at: at('2026-11-26T09:00:00Z'), credits: 0, charged_at: null, status: 'failed' }),
        made('acc_b', { created_at: at('2026-11-26T09:30:00Z'), credits: 5, charged_at: at('2026-11-26T09:31:00Z'), status: 'succeeded' }),
      ];
      for (const record of records.sort((a, b) => a.id.localeCompare(b.id))) await store.insertConversion(record);
      const usage = await dailyUsage(store, 'acc_a', NOW);
      assert.equal(usage.length, 30);
      assert.equal(usage[0]!.day, '2026-10-28');
      assert.equal(usage[29]!.day, '2026-11-26');
      const byDay = Object.fromEntries(usage.filter((d) => d.conversions > 0 || d.credits > 0).map((d) => [d.day, [d.conversions, d.credits]]));
      assert.deepEqual(byDay, { '2026-10-28': [1, 0], '2026-10-29': [0, 2], '2026-11-26': [2, 3] });
      assert.deepEqual(await dailyUsage(store, 'acc_nobody', NOW), usage.map((d) => ({ ...d, conversions: 0, credits: 0 })));
    });

    it('equals the page-by-page computation on 3,000 conversions over 45 days', async () => {
      const random = seeded(25);
      const start = NOW.getTime() - 45 * DAY_MS;
      const made = Array.from({ length: 3000 }, () => {
        const created = start + Math.floor(random() * 45 * DAY_MS);
        const charged = random() < 0.7;
        // Some are charged a while after they were made, across midnight and into the next days.
        const chargedAt = Math.min(NOW.getTime() - 1000, created + Math.floor(random() * (random() < 0.1 ? 3 * DAY_MS : 120_000)));
        return conversion(random() < 0.8 ? 'acc_history' : 'acc_neighbour', {
          id: idAt(created),
          created_at: new Date(created).toISOString(),
          status: charged ? 'succeeded' : 'failed',
          credits: charged ? 1 + Math.floor(random() * 9) : 0,
          charged_at: charged ? new Date(chargedAt).toISOString() : null,
        });
      });
      for (const record of made.sort((a, b) => a.id.localeCompare(b.id))) await store.insertConversion(record);
      const summed = await dailyUsage(store, 'acc_history', NOW);
      assert.deepEqual(summed, await pagedUsage(store, 'acc_history', NOW));
      assert.ok(summed.reduce((n, day) => n + day.conversions, 0) > 1500, 'most of the window is there');
    });
  });
}
