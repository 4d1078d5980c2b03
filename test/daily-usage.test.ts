/**
 * The account page's chart data (src/service/daily-usage.ts): conversions made and credits charged
 * per UTC day over the last 30 days, oldest first, another account's never counted, what is older
 * than the window not read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dailyUsage } from '../src/service/daily-usage.ts';
import { LowdbStore } from '../src/store/lowdb-store.ts';
import { conversion } from './helpers/store-records.ts';

const NOW = new Date('2026-11-26T15:00:00Z');
const at = (iso: string) => new Date(iso).toISOString();

describe('daily usage', () => {
  it('counts per UTC day over 30 days, credits on the day they were charged', async () => {
    const store = await LowdbStore.open({ dir: null });
    const records = [
      conversion('acc_a', { created_at: at('2026-10-20T10:00:00Z'), credits: 9, charged_at: at('2026-10-20T10:01:00Z'), status: 'succeeded' }),
      conversion('acc_a', { created_at: at('2026-10-28T23:59:00Z'), credits: 2, charged_at: at('2026-10-29T00:00:30Z'), status: 'succeeded' }),
      conversion('acc_a', { created_at: at('2026-11-26T08:00:00Z'), credits: 3, charged_at: at('2026-11-26T08:00:05Z'), status: 'succeeded' }),
      conversion('acc_a', { created_at: at('2026-11-26T09:00:00Z'), credits: 0, charged_at: null, status: 'failed' }),
      conversion('acc_b', { created_at: at('2026-11-26T09:30:00Z'), credits: 5, charged_at: at('2026-11-26T09:31:00Z'), status: 'succeeded' }),
    ];
    for (const record of records.sort((a, b) => a.id.localeCompare(b.id))) await store.insertConversion(record);
    const usage = await dailyUsage(store, 'acc_a', NOW);
    assert.equal(usage.length, 30);
    assert.equal(usage[0]!.day, '2026-10-28');
    assert.equal(usage[29]!.day, '2026-11-26');
    const byDay = Object.fromEntries(usage.filter((d) => d.conversions > 0 || d.credits > 0).map((d) => [d.day, [d.conversions, d.credits]]));
    assert.deepEqual(byDay, { '2026-10-28': [1, 0], '2026-10-29': [0, 2], '2026-11-26': [2, 3] });
  });
});
