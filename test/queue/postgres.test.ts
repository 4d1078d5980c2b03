/**
 * The queue in PostgreSQL's conversions table (PostgresJobSource) against a real server: two
 * sources (two nodes) taking at once claim each queued conversion exactly once; a claim whose
 * lease runs out unrenewed (its node died) is claimed by the other; a released claim of a row
 * still queued (a stop) is claimable at once; an account at its share is skipped (a share learned
 * at the push or, on a worker-only node, at the claim); a claim tells whether the quick lane
 * would have taken it (its account running nothing and light); a push on one
 * node wakes the other's workers through NOTIFY; a node restarted under its old id (its data
 * dir's) takes its leases back at start, where a node of another id waits for them to run out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PostgresJobSource } from '../../src/queue/postgres-job-source.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { nodesOnFreshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { conversion } from '../helpers/store-records.ts';

describe('PostgresJobSource', () => {
  let nodes: Awaited<ReturnType<typeof nodesOnFreshDatabase>>;
  let database: TestDatabase;
  let storeA: PostgresStore;
  let storeB: PostgresStore;
  before(async () => {
    nodes = await nodesOnFreshDatabase(2);
    database = nodes.database;
    [storeA, storeB] = nodes.stores as [PostgresStore, PostgresStore];
  });
  after(async () => {
    await nodes?.close();
  });

  const takeAll = async (source: PostgresJobSource): Promise<string[]> => {
    const taken: string[] = [];
    for (let id = await source.take(); id !== undefined; id = await source.take()) taken.push(id);
    return taken;
  };

  it('two nodes taking at once claim every queued conversion exactly once, oldest first', async () => {
    const records = Array.from({ length: 20 }, () => conversion('acc_q'));
    for (const record of records) await storeA.insertConversion(record);
    const [a, b] = [new PostgresJobSource(storeA), new PostgresJobSource(storeB)];
    const [takenA, takenB] = await Promise.all([takeAll(a), takeAll(b)]);
    assert.equal(takenA.length + takenB.length, 20);
    assert.deepEqual([...takenA, ...takenB].sort(), records.map((r) => r.id).sort(), 'each once');
    assert.deepEqual(takenA, [...takenA].sort(), 'in order on each node');
    for (const id of [...takenA, ...takenB]) await storeA.updateConversion(id, { status: 'cancelled' });
  });

  it('a lease that runs out unrenewed is claimed by the other node; a released one at once', async () => {
    const record = conversion('acc_lease');
    await storeA.insertConversion(record);
    const dying = new PostgresJobSource(storeA, { leaseMs: 300 });
    const other = new PostgresJobSource(storeB, { leaseMs: 300 });
    assert.equal(await dying.take(), record.id);
    assert.equal(await other.take(), undefined, 'held by a live lease');
    await new Promise((resolve) => setTimeout(resolve, 450));
    assert.equal(await other.take(), record.id, 'the lease ran out');
    other.done(record.id);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await dying.take(), record.id, 'released: claimable at once');
    await storeA.updateConversion(record.id, { status: 'cancelled' });
  });

  it('skips an account at its share of the node\'s workers', async () => {
    const first = conversion('acc_share');
    const second = conversion('acc_share');
    const otherAccount = conversion('acc_other_share');
    for (const record of [first, second, otherAccount]) await storeA.insertConversion(record);
    const source = new PostgresJobSource(storeA);
    for (const record of [first, second]) source.push(record.id, { account: 'acc_share', share: 1 });
    assert.equal(await source.take(), first.id);
    assert.equal(await source.take(), otherAccount.id, 'acc_share is at its share: the next account is served');
    assert.equal(await source.take(), undefined);
    // The first one ran and ended (the runner moves it on): acc_share has a place again.
    await storeA.updateConversion(first.id, { status: 'succeeded' });
    source.done(first.id);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await source.take(), second.id);
    for (const record of [second, otherAccount]) await storeA.updateConversion(record.id, { status: 'cancelled' });
    for (const record of [second, otherAccount]) source.done(record.id);
  });

  it('tells which claim the quick lane would have taken: an account running nothing that has not used its time lately', async () => {
    const [first, second] = [conversion('acc_worthy'), conversion('acc_worthy')];
    for (const record of [first, second]) await storeA.insertConversion(record);
    const source = new PostgresJobSource(storeA);
    assert.equal(await source.take(), first.id);
    assert.equal(source.quickWorthy(first.id), true, 'nothing of acc_worthy ran');
    assert.equal(await source.take(), second.id);
    assert.equal(source.quickWorthy(second.id), false, 'the first one holds a claim');
    // Both ran, the first for 70 s: the account is not light now.
    for (const record of [first, second]) await storeA.updateConversion(record.id, { status: 'succeeded' });
    source.done(first.id, 70_000);
    source.done(second.id);
    assert.equal(source.quickWorthy(first.id), false, 'forgotten at done');
    const third = conversion('acc_worthy');
    await storeA.insertConversion(third);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await source.take(), third.id);
    assert.equal(source.quickWorthy(third.id), false, 'running nothing, but heavy');
    await storeA.updateConversion(third.id, { status: 'cancelled' });
    source.done(third.id);
  });

  it('a worker-only node (no push) holds an account to the share its owner names at the claim', async () => {
    const records = [conversion('acc_remote'), conversion('acc_remote'), conversion('acc_remote_other')];
    for (const record of records) await storeA.insertConversion(record);
    const asked: string[] = [];
    const source = new PostgresJobSource(storeB, {
      ownerOf: async (account) => (asked.push(account), { account, share: account === 'acc_remote' ? 1 : Infinity }),
    });
    assert.equal(await source.take(), records[0]!.id);
    assert.equal(await source.take(), records[2]!.id, 'acc_remote is at its share of 1 on this node');
    assert.equal(await source.take(), undefined);
    assert.deepEqual(asked, ['acc_remote', 'acc_remote_other']);
    for (const record of records) await storeA.updateConversion(record.id, { status: 'cancelled' });
    for (const record of records) source.done(record.id);
  });

  it('a push on one node wakes the other through NOTIFY', async () => {
    const listening = new PostgresJobSource(storeB);
    await listening.start();
    try {
      const woke = new Promise<void>((resolve) => listening.onPush(resolve));
      new PostgresJobSource(storeA).push('cnv_announced');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([woke, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no wake-up within 2 s')), 2000)))]);
      clearTimeout(timer);
    } finally {
      await listening.stop();
    }
  });

  it('restarted under its old id, a node takes its leases back at start; another node waits for them to run out', async () => {
    const running = conversion('acc_restart');
    const claimed = conversion('acc_restart');
    for (const record of [running, claimed]) await storeA.insertConversion(record);
    const leaseMs = 60_000;
    const before = new PostgresJobSource(storeA, { node: 'node-restart', leaseMs, shared: true });
    assert.deepEqual([await before.take(), await before.take()], [running.id, claimed.id]);
    await storeA.updateConversion(running.id, { status: 'processing' });
    // The node dies here: no stop, no release; its leases have a minute to run.

    const abandoned: string[] = [];
    const stranger = new PostgresJobSource(storeB, { leaseMs, shared: true, onAbandoned: async (id) => void abandoned.push(id) });
    await stranger.start();
    await stranger.stop();
    assert.equal(abandoned.length, 0, 'another node leaves live leases alone');
    assert.equal(await new PostgresJobSource(storeB, { leaseMs }).take(), undefined, 'the claimed one is held');

    const logged: string[] = [];
    const restarted = new PostgresJobSource(storeA, {
      node: 'node-restart', leaseMs, shared: true, onAbandoned: async (id) => void abandoned.push(id), log: (event) => logged.push(event),
    });
    await restarted.start();
    try {
      assert.deepEqual(abandoned, [running.id], 'its running conversion taken over at start, not in a minute');
      assert.ok(logged.includes('queue.leases_taken_back'));
      const other = new PostgresJobSource(storeB, { leaseMs });
      assert.equal(await other.take(), claimed.id, 'its claim of a queued one dropped: claimable at once');
      other.done(claimed.id);
    } finally {
      await restarted.stop();
      for (const record of [running, claimed]) await storeA.updateConversion(record.id, { status: 'cancelled' });
    }
  });
});
