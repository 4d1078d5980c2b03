/** The runner's time limit: aborts after its time, passes the job's own abort on, and lets go when disposed. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { withTimeLimit } from '../../src/service/time-limit.ts';

describe('withTimeLimit', () => {
  it('aborts once the limit passes, and says it was the limit', async () => {
    const job = new AbortController();
    const limited = withTimeLimit(job.signal, 20);
    assert.equal(limited.signal.aborted, false);
    await sleep(60);
    assert.equal(limited.signal.aborted, true);
    assert.equal(limited.timedOut(), true);
    limited.dispose();
  });

  it('passes the job\'s own abort on with its reason: not a time-out', () => {
    const job = new AbortController();
    const limited = withTimeLimit(job.signal, 10_000);
    const reason = new Error('cancelled by the user');
    job.abort(reason);
    assert.equal(limited.signal.aborted, true);
    assert.equal(limited.signal.reason, reason);
    assert.equal(limited.timedOut(), false);
    limited.dispose();
  });

  it('a job signal aborted before the limit starts is aborted at once', () => {
    const job = new AbortController();
    job.abort(new Error('shutdown'));
    const limited = withTimeLimit(job.signal, 10_000);
    assert.equal(limited.signal.aborted, true);
    limited.dispose();
  });

  it('after dispose, neither the timer nor the job\'s signal abort it', async () => {
    const job = new AbortController();
    const limited = withTimeLimit(job.signal, 20);
    limited.dispose();
    await sleep(60);
    job.abort();
    assert.equal(limited.signal.aborted, false);
  });

  it('a deferred limit runs from start(), not from its making; start() twice changes nothing', async () => {
    const job = new AbortController();
    const limited = withTimeLimit(job.signal, 30, true);
    await sleep(60);
    assert.equal(limited.signal.aborted, false, 'no clock before start()');
    limited.start();
    await sleep(15);
    limited.start();
    assert.equal(limited.signal.aborted, false);
    // Due 30 ms after the first start. Timers fire in the order they are due: this sleep ends at
    // 40 ms, after the limit (30 ms) but before a clock the second start() had restarted (45 ms).
    await sleep(25);
    assert.equal(limited.timedOut(), true, 'the second start() did not restart the clock');
    limited.dispose();
  });

  it("a deferred limit still passes the job's own abort on before it starts", () => {
    const job = new AbortController();
    const limited = withTimeLimit(job.signal, 10_000, true);
    job.abort(new Error('cancelled'));
    assert.equal(limited.signal.aborted, true);
    assert.equal(limited.timedOut(), false);
    limited.dispose();
  });
});
