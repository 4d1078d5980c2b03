/**
 * The workers' quick lane: beside busy workers, a light account with nothing running starts at
 * once; a quick job that runs on moves to the workers' count (never more than the lane's places
 * over them) and frees its place; an account that has used its time lately waits like the others.
 * A small account's job (nothing running, every run lately quick) that finds a regular worker
 * free is handed to the engines as quick too (their warm spares are for it).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryJobSource } from '../../src/queue/job-source.ts';
import { RecentUse } from '../../src/queue/recent-use.ts';
import { WorkerPool } from '../../src/queue/worker-pool.ts';
import type { Lane } from '../../src/queue/job-source.ts';

const MOVE_MS = 60;
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));
const tenant = (account: string) => ({ account, share: Infinity });

/**
 * Two workers, two quick places; jobs run until the test ends them; what each got is recorded.
 * The workers are filled first (the queue serves accounts in turn, so pushes come in steps).
 */
function quickPool(recent = new RecentUse()) {
  const source = new MemoryJobSource(recent);
  const started = new Map<string, Lane>();
  const enders = new Map<string, () => void>();
  const pool = new WorkerPool(source, 2, (id, signal, _release, lane) => {
    started.set(id, lane);
    return new Promise<void>((resolve) => {
      enders.set(id, resolve);
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }, undefined, { places: 2, moveAfterMs: MOVE_MS });
  pool.start();
  return { source, pool, started, end: (id: string) => enders.get(id)!() };
}

describe('the quick lane', () => {
  it('a light account with nothing running starts beside busy workers; one with something running waits', async () => {
    const { source, pool, started, end } = quickPool();
    for (const id of ['a1', 'a2', 'a3']) source.push(id, tenant('A'));
    await tick();
    source.push('b1', tenant('B'));
    await tick();
    // a1 is served as quick by the engines too (A ran nothing), a2 not.
    assert.equal(started.get('a1'), 'quick');
    assert.equal(started.get('a2'), 'regular');
    assert.equal(started.get('b1'), 'quick', 'B had nothing running');
    assert.equal(started.has('a3'), false, 'A runs two already: not on the quick lane');
    for (const id of ['a1', 'a2', 'b1']) end(id);
    await tick();
    assert.ok(started.has('a3'));
    end('a3');
    await pool.stop();
  });

  it('a quick job that runs on moves to the workers after the mark, freeing its place; at most the places over them', async () => {
    const { source, pool, started, end } = quickPool();
    source.push('a1', tenant('A'));
    source.push('a2', tenant('A'));
    await tick();
    for (const account of ['B', 'C', 'D', 'E', 'F']) source.push(account.toLowerCase() + '1', tenant(account));
    await tick();
    assert.deepEqual(['b1', 'c1'].map((id) => started.get(id)), ['quick', 'quick']);
    assert.equal(started.has('d1'), false, 'both places taken');
    // b1 and c1 move to the workers' count (2 + 2 at most): d1 and e1 take the places.
    await tick(MOVE_MS + 30);
    assert.deepEqual(['d1', 'e1'].map((id) => started.get(id)), ['quick', 'quick']);
    // The workers are 2 over already: d1 and e1 keep their places past the mark, f1 waits.
    await tick(MOVE_MS + 30);
    assert.equal(started.has('f1'), false);
    assert.equal(pool.active, 6, 'workers + 2 x places at most');
    // One of the moved ones ends: d1 moves at its next try, and f1 gets its place.
    end('b1');
    await tick(MOVE_MS + 30);
    assert.equal(started.get('f1'), 'quick');
    for (const id of ['a1', 'a2', 'c1', 'd1', 'e1', 'f1']) end(id);
    await pool.stop();
  });

  it('a small account\'s job that finds a regular worker free is served as quick; a busy account\'s or one that ran a long one lately is not', async () => {
    const recent = new RecentUse(10_000);
    recent.record('S', 300);
    recent.record('S', 1900);
    // Light (3 s of 10), but one conversion ran past the quick mark.
    recent.record('L', 3000);
    const { source, pool, started, end } = quickPool(recent);
    source.push('l1', tenant('L'));
    source.push('s1', tenant('S'));
    source.push('s2', tenant('S'));
    await tick();
    assert.equal(started.get('l1'), 'regular', 'ran a long one lately');
    assert.equal(started.get('s1'), 'quick', 'on a regular worker, its runs all quick and running nothing');
    assert.equal(source.quickWorthy('s1'), true);
    end('l1');
    await tick();
    assert.equal(started.get('s2'), 'regular', 'S runs s1');
    end('s1');
    end('s2');
    await tick();
    assert.equal(source.quickWorthy('s1'), false, 'forgotten when done');
    await pool.stop();
  });

  it('an account that used its time lately is not light: it waits for a worker', async () => {
    let now = 0;
    const recent = new RecentUse(10_000, () => now);
    recent.record('H', 11_000);
    const { source, pool, started, end } = quickPool(recent);
    source.push('a1', tenant('A'));
    source.push('a2', tenant('A'));
    await tick();
    source.push('h1', tenant('H'));
    source.push('l1', tenant('L'));
    await tick();
    assert.equal(started.get('l1'), 'quick');
    assert.equal(started.has('h1'), false, 'heavy: no quick place');
    // Five minutes on, its runs have aged out: light again.
    now += 5 * 60_000 + 1;
    end('l1');
    await tick();
    assert.equal(started.get('h1'), 'quick');
    for (const id of ['a1', 'a2', 'h1']) end(id);
    await pool.stop();
  });
});
