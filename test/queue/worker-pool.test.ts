import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryJobSource } from '../../src/queue/job-source.ts';
import { JobCancelled, WorkerPool } from '../../src/queue/worker-pool.ts';

/** A job the test ends by hand, with what the pool handed it. */
interface HeldJob {
  id: string;
  signal: AbortSignal;
  releaseSlot: () => void;
  end: () => void;
  ended: Promise<void>;
}

/** A pool whose handler records each job and runs until the test ends it (or its signal aborts). */
function heldPool(workers: number) {
  const source = new MemoryJobSource();
  const jobs: HeldJob[] = [];
  let holders = 0;
  let mostHolders = 0;
  const pool = new WorkerPool(source, workers, (id, signal, releaseSlot) => {
    let end: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (end = resolve));
    holders += 1;
    mostHolders = Math.max(mostHolders, holders);
    let released = false;
    const job: HeldJob = {
      id, signal, end, ended,
      releaseSlot: () => {
        if (!released) holders -= 1;
        released = true;
        releaseSlot();
      },
    };
    jobs.push(job);
    signal.addEventListener('abort', () => end(), { once: true });
    return ended.finally(() => {
      if (!released) holders -= 1;
      released = true;
    });
  });
  return { source, pool, jobs, mostHolders: () => mostHolders, started: () => jobs.map((job) => job.id) };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Does `action` (ending or releasing jobs), then lets the pool react. */
async function then(action: () => void): Promise<void> {
  action();
  await tick();
}

describe('WorkerPool', () => {
  it('runs at most `workers` jobs at once, in the order they were queued', async () => {
    const { source, pool, jobs, mostHolders, started } = heldPool(2);
    pool.start();
    for (const id of ['a', 'b', 'c', 'd', 'e']) source.push(id);
    await tick();
    assert.deepEqual(started(), ['a', 'b']);
    await then(() => jobs[1]!.end());
    assert.deepEqual(started(), ['a', 'b', 'c']);
    await then(() => jobs.forEach((job) => job.end()));
    await then(() => jobs.forEach((job) => job.end()));
    assert.deepEqual(started(), ['a', 'b', 'c', 'd', 'e']);
    assert.equal(mostHolders(), 2);
    assert.equal(source.size, 0);
  });

  it('a job that gives its slot back lets the next one start while it finishes, and still counts as active', async () => {
    const { source, pool, jobs, mostHolders, started } = heldPool(1);
    pool.start();
    for (const id of ['a', 'b', 'c']) source.push(id);
    await tick();
    assert.deepEqual(started(), ['a']);
    await then(() => jobs[0]!.releaseSlot());
    assert.deepEqual(started(), ['a', 'b'], 'b starts while a is still finishing');
    assert.equal(pool.active, 2);
    assert.deepEqual(pool.activeIds().sort(), ['a', 'b']);
    // Giving the slot back twice, or ending after giving it back, frees nothing more.
    await then(() => {
      jobs[0]!.releaseSlot();
      jobs[0]!.end();
    });
    assert.deepEqual(started(), ['a', 'b'], 'c waits: b still holds the only slot');
    await then(() => jobs[1]!.end());
    assert.deepEqual(started(), ['a', 'b', 'c']);
    await then(() => jobs[2]!.end());
    assert.equal(pool.active, 0);
    assert.equal(mostHolders(), 1);
  });

  it('abort and stop reach a job that has given its slot back', async () => {
    const { source, pool, jobs } = heldPool(1);
    pool.start();
    source.push('a');
    source.push('b');
    await tick();
    jobs[0]!.releaseSlot();
    await tick();
    assert.equal(await pool.abort('a'), true);
    assert.ok(jobs[0]!.signal.reason instanceof JobCancelled);
    assert.equal((jobs[0]!.signal.reason as JobCancelled).why, 'cancelled');
    jobs[1]!.releaseSlot();
    await pool.stop();
    assert.equal((jobs[1]!.signal.reason as JobCancelled).why, 'shutdown');
    assert.equal(pool.active, 0);
  });

  it('jobs finishing after giving their slot back are at most as many as the workers', async () => {
    const { source, pool, jobs, started } = heldPool(1);
    pool.start();
    for (const id of ['a', 'b', 'c']) source.push(id);
    await tick();
    await then(() => jobs[0]!.releaseSlot());
    assert.deepEqual(started(), ['a', 'b']);
    // a is still finishing: b's release is refused, b keeps its slot and c waits.
    await then(() => jobs[1]!.releaseSlot());
    assert.deepEqual(started(), ['a', 'b']);
    await then(() => jobs[0]!.end());
    assert.deepEqual(started(), ['a', 'b'], 'b still holds the slot');
    await then(() => jobs[1]!.end());
    assert.deepEqual(started(), ['a', 'b', 'c']);
    await then(() => jobs[2]!.end());
    assert.equal(pool.active, 0);
  });

  it('takes nothing before start(): what is pushed earlier waits for it', async () => {
    const source = new MemoryJobSource();
    const ran: string[] = [];
    const pool = new WorkerPool(source, 2, async (id) => {
      ran.push(id);
    });
    source.push('early');
    await tick();
    assert.deepEqual(ran, [], 'started before the pool was');
    pool.start();
    await tick();
    assert.deepEqual(ran, ['early']);
    await pool.stop();
  });

  it('a handler that throws before returning a promise is reported and does not keep its slot', async () => {
    const source = new MemoryJobSource();
    const reported: string[] = [];
    const ran: string[] = [];
    const pool = new WorkerPool(source, 1, (id) => {
      ran.push(id);
      if (id === 'bad') throw new Error('thrown at once');
      return Promise.resolve();
    }, (id, error) => reported.push(`${id}: ${(error as Error).message}`));
    pool.start();
    source.push('bad');
    source.push('good');
    await tick();
    await tick();
    assert.deepEqual(reported, ['bad: thrown at once']);
    assert.deepEqual(ran, ['bad', 'good']);
    assert.equal(pool.active, 0);
  });
});

