/**
 * The progress a running conversion shows (src/service/run/progress.ts): written at most once an
 * interval, the last value held back by the interval written when it has passed (an engine that
 * reports 40 and then works for seconds is shown at 40), never back (a second try counts again
 * from 0), one write in flight at a time, and nothing written once the engine is done.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { progressWriter } from '../../src/service/run/progress.ts';
import type { Store } from '../../src/store/types.ts';

const INTERVAL_MS = 60;

/** A store that records each progress written, taking `writeMs` for each. */
function recordingStore(writeMs = 0): { store: Store; written: number[]; inFlightMost: () => number } {
  const written: number[] = [];
  let inFlight = 0;
  let most = 0;
  const store = {
    async updateConversion(_id: string, patch: { progress?: number }) {
      inFlight++;
      most = Math.max(most, inFlight);
      written.push(patch.progress!);
      await sleep(writeMs);
      inFlight--;
      return undefined;
    },
  } as unknown as Store;
  return { store, written, inFlightMost: () => most };
}

describe('the progress writer', () => {
  it('writes the first value at once and one held back by the interval once it has passed', async () => {
    const { store, written } = recordingStore();
    const progress = progressWriter(store, 'conv_test', INTERVAL_MS);
    progress.report(0);
    progress.report(40);
    assert.deepEqual(written, [0], 'the second, within the interval, waits');
    await sleep(INTERVAL_MS * 3);
    assert.deepEqual(written, [0, 40], 'and is written once the interval has passed');
    progress.stop();
  });

  it('writes only the latest of the values reported within one interval, whole and below 100', async () => {
    const { store, written } = recordingStore();
    const progress = progressWriter(store, 'conv_test', INTERVAL_MS);
    progress.report(5.7);
    for (const percent of [10, 20, 30.9]) progress.report(percent);
    await sleep(INTERVAL_MS * 3);
    progress.report(100);
    await sleep(INTERVAL_MS * 3);
    assert.deepEqual(written, [5, 30, 99]);
    progress.stop();
  });

  it('never goes back: a second try counting again from 0 is shown from where the first got to', async () => {
    const { store, written } = recordingStore();
    const progress = progressWriter(store, 'conv_test', INTERVAL_MS);
    progress.report(60);
    await sleep(INTERVAL_MS * 2);
    for (const percent of [0, 40, 60]) {
      progress.report(percent);
      await sleep(INTERVAL_MS * 2);
    }
    progress.report(80);
    await sleep(INTERVAL_MS * 3);
    assert.deepEqual(written, [60, 80]);
    progress.stop();
  });

  it('keeps one write in flight on a slow store, and writes the latest value after it', async () => {
    const { store, written, inFlightMost } = recordingStore(INTERVAL_MS * 3);
    const progress = progressWriter(store, 'conv_test', INTERVAL_MS);
    progress.report(10);
    await sleep(INTERVAL_MS * 1.5);
    progress.report(20);
    progress.report(30);
    await sleep(INTERVAL_MS * 8);
    assert.deepEqual(written, [10, 30]);
    assert.equal(inFlightMost(), 1);
    progress.stop();
  });

  it('writes nothing held back once stopped', async () => {
    const { store, written } = recordingStore();
    const progress = progressWriter(store, 'conv_test', INTERVAL_MS);
    progress.report(0);
    progress.report(99);
    progress.stop();
    await sleep(INTERVAL_MS * 3);
    assert.deepEqual(written, [0]);
  });
});
