/** The queue is fair between accounts: served in turn, a tenant at its share waits. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryJobSource } from '../../src/queue/job-source.ts';

const tenant = (account: string, share = 1) => ({ account, share });

describe('fair job source', () => {
  it('serves the accounts in turn, each in its own order', () => {
    const source = new MemoryJobSource();
    for (const id of ['a1', 'a2', 'a3']) source.push(id, tenant('A', Infinity));
    source.push('b1', tenant('B', Infinity));
    source.push('b2', tenant('B', Infinity));
    const order = [source.take(), source.take(), source.take(), source.take(), source.take(), source.take()];
    assert.deepEqual(order, ['a1', 'b1', 'a2', 'b2', 'a3', undefined]);
    assert.equal(source.size, 0);
  });

  it('an account at its share waits; the others are served; its place frees when a job ends', () => {
    const source = new MemoryJobSource();
    source.push('a1', tenant('A'));
    source.push('a2', tenant('A'));
    assert.equal(source.take(), 'a1');
    assert.equal(source.take(), undefined, 'A holds its one place');
    assert.equal(source.size, 1);
    source.push('b1', tenant('B'));
    assert.equal(source.take(), 'b1', 'another account is served meanwhile');
    source.done('a1');
    assert.equal(source.take(), 'a2');
  });

  it('a removed job is not served; pushing an id twice queues it once', () => {
    const source = new MemoryJobSource();
    source.push('a1', tenant('A', 5));
    source.push('a1', tenant('A', 5));
    source.push('a2', tenant('A', 5));
    assert.equal(source.remove('a1'), true);
    assert.equal(source.remove('a1'), false);
    assert.equal(source.take(), 'a2');
    assert.equal(source.take(), undefined);
  });

  it('jobs without an owner are one account without a share of its own', () => {
    const source = new MemoryJobSource();
    for (const id of ['x', 'y', 'z']) source.push(id);
    assert.deepEqual([source.take(), source.take(), source.take()], ['x', 'y', 'z']);
  });
});
