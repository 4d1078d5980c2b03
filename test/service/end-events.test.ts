/** End events: a waiter gets the ended record, or nothing on time-out, abort or cancel, and never outlives them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { EndEvents } from '../../src/service/end-events.ts';

const record = (id: string) => ({ id, status: 'succeeded' }) as ConversionRecord;
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe('EndEvents', () => {
  it('resolves a waiter with the ended record and tells subscribers too', async () => {
    const events = new EndEvents();
    const seen: string[] = [];
    events.subscribe((r) => seen.push(r.id));
    const waiter = events.waitFor('cnv_1', 30_000);
    events.emit(record('cnv_1'));
    assert.equal((await waiter.ended)?.id, 'cnv_1');
    assert.deepEqual(seen, ['cnv_1']);
  });

  it('cancel ends the wait at once and clears its timer (a 30 s timer must not hold the process)', async () => {
    const events = new EndEvents();
    const before = timers();
    const waiter = events.waitFor('cnv_2', 30_000);
    assert.equal(timers(), before + 1);
    waiter.cancel();
    assert.equal(await waiter.ended, undefined);
    assert.equal(timers(), before);
  });

  it('an abort ends the wait with nothing, a time-out too', async () => {
    const events = new EndEvents();
    const controller = new AbortController();
    const aborted = events.waitFor('cnv_3', 30_000, controller.signal);
    controller.abort();
    assert.equal(await aborted.ended, undefined);
    assert.equal(await events.waitFor('cnv_4', 10).ended, undefined);
  });
});
