/** The public JSON cache renders anew whenever anything of the record or the base URL changed. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toPublicConversion, type ConversionRecord } from '../../src/model/conversion.ts';
import { PublicJsonCache } from '../../src/service/public-json-cache.ts';

function record(overrides: Partial<ConversionRecord> = {}): ConversionRecord {
  return {
    id: 'cnv_01test', account_id: 'acc_1', status: 'processing', source: 'png', target: 'webp', variant: null,
    options: { quality: 80 }, original_name: 'a.png', input_size: 10, input: { kind: 'file', sha256: 'x' }, progress: 10,
    reserved_credits: 1, credits: 0, charged_at: null, created_at: '2026-01-01T00:00:00.000Z', started_at: null,
    finished_at: null, result: null, error: null, callback_url: null, idempotency_key: null, request_fingerprint: null,
    ...overrides,
  };
}

const expected = (r: ConversionRecord, base: string) => JSON.stringify(toPublicConversion(r, base));

describe('PublicJsonCache', () => {
  it('gives the same bytes as rendering afresh, through every change of the record', () => {
    const cache = new PublicJsonCache();
    let current = record();
    const base = 'http://127.0.0.1:1/v1';
    assert.equal(cache.render(current, base), expected(current, base));
    const steps: Partial<ConversionRecord>[] = [
      { progress: 55 },
      { status: 'succeeded', progress: 100, finished_at: '2026-01-01T00:00:01.000Z', result: { filename: 'a.webp', size: 5, mime: 'image/webp', expires_at: '2026-01-02T00:00:00.000Z' } },
      { result: { filename: 'a.webp', size: 6, mime: 'image/webp', expires_at: '2026-01-02T00:00:00.000Z' } },
      { status: 'expired' },
      { options: { quality: 80 } },
    ];
    for (const step of steps) {
      current = { ...current, ...step };
      assert.equal(cache.render(current, base), expected(current, base), JSON.stringify(step));
      // Asked again unchanged (a fresh copy, as the store hands out): the same bytes.
      assert.equal(cache.render({ ...current }, base), expected(current, base));
    }
    const other = 'https://files.example/v1';
    assert.equal(cache.render(current, other), expected(current, other));
  });

  it('a field added to or missing from the record counts as a change', () => {
    const cache = new PublicJsonCache();
    const base = 'http://x/v1';
    const full = record();
    cache.render(full, base);
    const { callback_url: _dropped, ...fewer } = full;
    const changed = { ...(fewer as ConversionRecord), original_name: 'b.png' };
    assert.equal(cache.render(changed, base), expected(changed, base));
  });

  it('keeps no input held in the record, and finds the record unchanged when only that goes', () => {
    const cache = new PublicJsonCache();
    const base = 'http://x/v1';
    const held = record({ input_bytes: Buffer.alloc(30_000, 1).toString('base64') });
    const first = cache.render(held, base);
    assert.doesNotMatch(first, /input_bytes|AQEB/);
    // The end drops the bytes (as Object.assign with undefined leaves the key): nothing shown changed.
    assert.equal(cache.render({ ...held, input_bytes: undefined }, base), first);
    const { input_bytes: _gone, ...without } = held;
    assert.equal(cache.render(without, base), first);
    assert.equal(cache.render({ ...held, progress: 90 }, base), expected({ ...held, progress: 90 }, base));
  });

  it('starts over past its limit instead of growing', () => {
    const cache = new PublicJsonCache(2);
    const base = 'http://x/v1';
    for (const id of ['cnv_a', 'cnv_b', 'cnv_c', 'cnv_d', 'cnv_e', 'cnv_a']) {
      const r = record({ id });
      assert.equal(cache.render(r, base), expected(r, base));
      assert.ok(cache.size <= 2, `${cache.size} conversions held, limit 2`);
    }
  });
});
