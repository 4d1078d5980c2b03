/**
 * The web sign-in's limit (daemon/web/sign-in-failures.ts): 5 failures a minute per typed name, 20
 * per address, only failures counted. On one node in memory; on a cluster in the database, so that
 * guesses spread over two nodes (two PostgresStores on one real database) are counted together,
 * and the sweep forgets the buckets that are full again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { SharedFailureBuckets } from '../../src/service/shared-rate-limiter.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { SIGN_IN_FAILURES_PER_MINUTE, SignInFailures } from '../../daemon/web/sign-in-failures.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';

/** Takes `n` attempts that all fail; the waits asked for, null where the attempt was allowed. */
async function failures(limit: SignInFailures, n: number, address: string, name: string): Promise<(number | null)[]> {
  const waits: (number | null)[] = [];
  for (let i = 0; i < n; i++) waits.push(await limit.take(address, name));
  return waits;
}

describe('sign-in failures on one node', () => {
  it('five wrong passwords for a name, then a wait; a right one gives its attempt back', async () => {
    const limit = new SignInFailures();
    assert.equal(await limit.take('198.51.100.7', 'Erin'), null);
    await limit.succeeded('198.51.100.7', 'Erin');
    const waits = await failures(limit, SIGN_IN_FAILURES_PER_MINUTE.name + 1, '198.51.100.7', 'erin ');
    assert.deepEqual(waits.slice(0, -1), Array(SIGN_IN_FAILURES_PER_MINUTE.name).fill(null), 'the right one was given back; the name is matched as typed, trimmed, in any case');
    assert.ok((waits.at(-1) ?? 0) >= 1, 'then a wait');
    assert.equal(await limit.take('198.51.100.8', 'frank'), null, 'another name from another address is not held');
  });

  it('names with colons are names, not addresses: two that share their first parts are counted apart', async () => {
    const limit = new SignInFailures();
    await failures(limit, SIGN_IN_FAILURES_PER_MINUTE.name, '198.51.100.9', 'a:b:c:d:e');
    assert.notEqual(await limit.take('198.51.100.9', 'a:b:c:d:e'), null);
    assert.equal(await limit.take('198.51.100.9', 'a:b:c:d:f'), null);
  });

  it('a refused name does not use up the address\'s attempt', async () => {
    const limit = new SignInFailures();
    await failures(limit, SIGN_IN_FAILURES_PER_MINUTE.name, '2001:db8::1', 'grace');
    // Many refusals for the held name: none of them counts against the address.
    await failures(limit, 40, '2001:db8::2', 'grace');
    const others: (number | null)[] = [];
    for (let i = 0; i <= SIGN_IN_FAILURES_PER_MINUTE.address - SIGN_IN_FAILURES_PER_MINUTE.name; i++) others.push(await limit.take('2001:db8::3', `heidi-${i}`));
    assert.deepEqual(others.slice(0, -1), Array(others.length - 1).fill(null), 'the /64 still has its other attempts');
    assert.ok((others.at(-1) ?? 0) >= 1, 'and no more: the three addresses are one /64');
  });
});

describe('sign-in failures on a cluster (PostgreSQL)', () => {
  let database: TestDatabase;
  let nodeA: PostgresStore;
  let nodeB: PostgresStore;
  before(async () => {
    database = await freshDatabase();
    [nodeA, nodeB] = await Promise.all([PostgresStore.open({ url: database.url, poolSize: 2 }), PostgresStore.open({ url: database.url, poolSize: 2 })]);
  });
  after(async () => {
    await Promise.all([nodeA?.close(), nodeB?.close()]);
    await database?.drop();
  });

  it('failures spread over two nodes are counted together, per name and per address', async () => {
    const a = new SignInFailures(new SharedFailureBuckets(nodeA));
    const b = new SignInFailures(new SharedFailureBuckets(nodeB));
    // A right password on one node gives its attempt back for both.
    assert.equal(await a.take('203.0.113.5', 'ivan'), null);
    await a.succeeded('203.0.113.5', 'ivan');
    for (let i = 0; i < SIGN_IN_FAILURES_PER_MINUTE.name; i++) assert.equal(await (i % 2 ? a : b).take(`203.0.113.${10 + i}`, 'IVAN'), null);
    const waitA = await a.take('203.0.113.99', 'ivan');
    const waitB = await b.take('203.0.113.98', 'ivan');
    assert.ok(waitA !== null && waitA >= 1 && waitB !== null && waitB >= 1, `held on both nodes (${waitA}, ${waitB})`);

    // One address trying many names over both nodes: 20, then a wait; a /64 is one address.
    const waits: (number | null)[] = [];
    for (let i = 0; i < SIGN_IN_FAILURES_PER_MINUTE.address + 1; i++) waits.push(await (i % 2 ? a : b).take(`2001:db8:0:7::${i + 1}`, `judy-${i}`));
    assert.deepEqual(waits.slice(0, -1), Array(SIGN_IN_FAILURES_PER_MINUTE.address).fill(null));
    assert.ok((waits.at(-1) ?? 0) >= 1, 'the 21st from that /64 waits');
  });

  it('the sweep forgets the buckets nobody took from for a minute, and only those', async () => {
    const a = new SignInFailures(new SharedFailureBuckets(nodeA));
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await a.take('192.0.2.44', 'kim');
      const left = async () => (await client.query<{ key: string }>("SELECT key FROM convd_rate_buckets WHERE key IN ('signin-name:kim', 'signin-address:192.0.2.44') ORDER BY key")).rows.map((row) => row.key);
      assert.deepEqual(await left(), ['signin-address:192.0.2.44', 'signin-name:kim']);
      assert.equal(await nodeA.pruneRateBuckets(), 0, 'buckets used a moment ago are kept');
      await client.query("UPDATE convd_rate_buckets SET updated_ms = updated_ms - 61000 WHERE key LIKE 'signin-%'");
      assert.ok(await nodeA.pruneRateBuckets() >= 2, 'the name\'s and the address\'s buckets');
      assert.deepEqual(await left(), []);
    } finally {
      await client.end();
    }
  });
});
