import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_ATTEMPTS, RETRY_WAITS_MS, nextRetryDelayMs } from '../../src/webhooks/schedule.ts';

const MIN = 60_000;

/** Every wait of one delivery that never succeeds. */
function allWaits(options: Parameters<typeof nextRetryDelayMs>[1]): number[] {
  const waits: number[] = [];
  for (let attempts = 1; ; attempts += 1) {
    const wait = nextRetryDelayMs(attempts, options);
    if (wait === null) return waits;
    waits.push(wait);
  }
}

describe('retry schedule (docs/api.md)', () => {
  it('is six attempts: at once, then after 1, 5, 15, 30 and 40 minutes (91 min in all)', () => {
    const waits = allWaits({ random: () => 0.5 }); // 0.5 is the middle of the jitter range: no jitter
    assert.deepEqual(waits, [1 * MIN, 5 * MIN, 15 * MIN, 30 * MIN, 40 * MIN]);
    assert.equal(MAX_ATTEMPTS, 6);
    assert.equal(waits.reduce((a, b) => a + b, 0), 91 * MIN);
    assert.equal(nextRetryDelayMs(6), null);
    assert.equal(nextRetryDelayMs(60), null);
  });

  it('jitters each wait by at most ±10 %', () => {
    assert.deepEqual(allWaits({ random: () => 0 }), RETRY_WAITS_MS.map((w) => Math.round(w * 0.9)));
    const top = allWaits({ random: () => 1 - Number.EPSILON });
    top.forEach((wait, i) => {
      assert.ok(wait <= Math.round(RETRY_WAITS_MS[i] * 1.1) && wait > RETRY_WAITS_MS[i] * 1.09, `wait ${i}: ${wait}`);
    });
    // With the real random source: always in bounds, and actually varying.
    const firstWaits = new Set<number>();
    for (let i = 0; i < 2000; i += 1) {
      const waits = allWaits({});
      waits.forEach((wait, j) => {
        assert.ok(wait >= RETRY_WAITS_MS[j] * 0.9 && wait <= RETRY_WAITS_MS[j] * 1.1, `wait ${j}: ${wait}`);
      });
      firstWaits.add(waits[0]);
    }
    assert.ok(firstWaits.size > 100, `only ${firstWaits.size} distinct first waits`);
    const totals = Array.from({ length: 200 }, () => allWaits({}).reduce((a, b) => a + b, 0));
    assert.ok(Math.min(...totals) >= 91 * MIN * 0.9 && Math.max(...totals) <= 91 * MIN * 1.1);
  });

  it('scales every wait for tests', () => {
    assert.deepEqual(allWaits({ scale: 0.001, random: () => 0.5 }), [60, 300, 900, 1800, 2400]);
    assert.equal(allWaits({ scale: 0.001, random: () => 0.5 }).reduce((a, b) => a + b, 0), 5460);
  });

  it('refuses nonsense arguments', () => {
    assert.throws(() => nextRetryDelayMs(0), RangeError);
    assert.throws(() => nextRetryDelayMs(1.5), RangeError);
    assert.throws(() => nextRetryDelayMs(1, { scale: 0 }), RangeError);
    assert.throws(() => nextRetryDelayMs(1, { scale: Number.POSITIVE_INFINITY }), RangeError);
  });
});
