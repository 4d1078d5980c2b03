/**
 * The observed store (src/store/observed-store.ts), which the daemon's logs and metrics hook
 * into, passes a write's options on: a progress write (`whileActive`) that arrives after the end
 * changes nothing, and each status change is still told once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConversionStatus } from '../../src/model/status.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { observeStore } from '../../src/store/observed-store.ts';
import { conversion } from '../helpers/store-records.ts';

describe('observed store', () => {
  it('passes whileActive on: a late progress write leaves an ended conversion as it ended', async () => {
    const inner = await LowdbStore.open({ dir: null });
    const told: [ConversionStatus | null, ConversionStatus][] = [];
    const store = observeStore(inner, { onTransition: (record, from) => told.push([from, record.status]) });
    const record = conversion('acc_observed', { status: 'processing', progress: 10 });
    await store.insertConversion(record);
    assert.equal((await store.updateConversion(record.id, { progress: 50 }, { deferred: true, whileActive: true }))?.progress, 50);
    await store.updateConversion(record.id, { status: 'succeeded', progress: 100 }, { whileActive: true });
    const late = await store.updateConversion(record.id, { progress: 60 }, { deferred: true, whileActive: true });
    assert.deepEqual([late?.status, late?.progress], ['succeeded', 100]);
    assert.equal((await inner.getConversion(record.id))?.progress, 100);
    assert.deepEqual(told, [[null, 'processing'], ['processing', 'succeeded']]);
    await inner.close();
  });
});
