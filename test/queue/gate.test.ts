import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { ConcurrencyGate } from '../../src/queue/concurrency-gate.ts';

describe('ConcurrencyGate', () => {
  it('lets at most `limit` runs through at once, the rest in arrival order', async () => {
    const gate = new ConcurrencyGate(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const signal = new AbortController().signal;
    await Promise.all(Array.from({ length: 6 }, (_, i) => gate.run(signal, async () => {
      started.push(i);
      running += 1;
      most = Math.max(most, running);
      await sleep(20);
      running -= 1;
    })));
    assert.equal(most, 2);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5]);
  });

  it('a waiter whose signal aborts leaves the line with the reason and never runs; a failed run frees its place', async () => {
    const gate = new ConcurrencyGate(1);
    const signal = new AbortController().signal;
    let release: () => void = () => undefined;
    const first = gate.run(signal, () => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    let ran = false;
    const waiting = gate.run(controller.signal, async () => {
      ran = true;
    });
    const reason = new Error('cancelled');
    controller.abort(reason);
    await assert.rejects(waiting, (error) => error === reason);
    release();
    await first;
    assert.equal(ran, false);
    await assert.rejects(gate.run(signal, async () => {
      throw new Error('engine failed');
    }), /engine failed/);
    assert.equal(await gate.run(signal, async () => 'next'), 'next');
    const aborted = new AbortController();
    aborted.abort(new Error('before'));
    await assert.rejects(gate.run(aborted.signal, async () => 'never'), /before/);
  });

  it('refuses a limit that is not a positive integer', () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) assert.throws(() => new ConcurrencyGate(limit), RangeError);
  });
});
