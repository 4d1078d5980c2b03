/**
 * Requests per minute shared by the nodes (SharedRateLimiter on a real PostgreSQL): a node takes
 * a key's tokens in batches, so a busy key costs one statement per batch, not one per request,
 * and requests arriving together while a batch is on its way wait for it rather than each asking;
 * an empty bucket refuses on the node, with no statement, until it holds a token again; two nodes
 * taking from one bucket pass the limit within a batch per node; a limit under 40 a minute is
 * taken a token at a time, exactly as before. Statements are counted at the store's method, one
 * statement each.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { RateDecision } from '../../src/service/rate-limiter.ts';
import { rateBatch, SharedRateLimiter } from '../../src/service/shared-rate-limiter.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { nodesOnFreshDatabase, type TestDatabase } from '../helpers/postgres.ts';

/** A store whose rate statements are counted. */
function counted(store: PostgresStore): { store: PostgresStore; statements: () => number } {
  let statements = 0;
  const take = store.rateBuckets.takeRateTokens.bind(store.rateBuckets);
  store.rateBuckets.takeRateTokens = (key, limit, want) => {
    statements++;
    return take(key, limit, want);
  };
  return { store, statements: () => statements };
}

describe('requests per minute shared by the nodes, in batches', () => {
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

  it('batches are a twentieth of the limit, one token below 40 a minute, at most 50', () => {
    assert.deepEqual([30, 39, 40, 120, 600, 60_000].map(rateBatch), [1, 1, 2, 6, 30, 50]);
  });

  it('a busy key costs one statement per batch; requests arriving together share one', async () => {
    const { store, statements } = counted(storeA);
    const limiter = new SharedRateLimiter(store);
    const decisions: RateDecision[] = [];
    for (let i = 0; i < 300; i++) decisions.push(await limiter.take('acc_busy', 600));
    assert.ok(decisions.every((d) => d.allowed));
    assert.equal(statements(), 300 / 30, 'one per batch of 30');
    assert.deepEqual(decisions.slice(0, 3).map((d) => d.remaining), [599, 598, 597], 'counted down as on one node');
    const together = await Promise.all(Array.from({ length: 90 }, () => limiter.take('acc_busy', 600)));
    assert.equal(together.filter((d) => d.allowed).length, 90);
    assert.equal(statements(), 10 + 3, 'three batches for 90 at once');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { tokens } = (await client.query<{ tokens: number }>('SELECT tokens FROM convd_rate_buckets WHERE key = $1', ['acc_busy'])).rows[0]!;
      assert.ok(tokens >= 600 - 390 && tokens < 600 - 390 + 10, `the bucket holds ${tokens}: 390 taken, a few refilled`);
    } finally {
      await client.end();
    }
  });

  it('an empty bucket refuses on the node without a statement until it holds a token again', async () => {
    const { store, statements } = counted(storeB);
    const limiter = new SharedRateLimiter(store);
    for (let i = 0; i < 30; i++) assert.equal((await limiter.take('acc_flood', 30)).allowed, true, `request ${i}`);
    assert.equal(statements(), 30, 'a token at a time under 40 a minute');
    const refused: RateDecision[] = [];
    for (let i = 0; i < 200; i++) refused.push(await limiter.take('acc_flood', 30));
    assert.ok(refused.every((d) => !d.allowed && d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= 2), JSON.stringify(refused[0]));
    assert.equal(statements(), 31, 'the first refusal asked; the 199 after it did not');
    // A token comes back every 2 s at 30 a minute.
    await new Promise((resolve) => setTimeout(resolve, refused[0]!.retryAfterSeconds * 1000 + 300));
    assert.equal((await limiter.take('acc_flood', 30)).allowed, true, 'refilled: asked again, and passed');
    assert.equal(statements(), 32);
  });

  it('two nodes taking from one bucket pass the limit, within a batch per node', async () => {
    const a = counted(storeA);
    const b = counted(storeB);
    const nodes = [new SharedRateLimiter(a.store), new SharedRateLimiter(b.store)];
    const started = Date.now();
    let passed = 0;
    for (let i = 0; i < 200; i++) if ((await nodes[i % 2]!.take('acc_spread', 120)).allowed) passed++;
    const refilled = Math.ceil(((Date.now() - started) / 60_000) * 120);
    const tolerance = 2 * (rateBatch(120) - 1);
    assert.ok(passed >= 120 - tolerance && passed <= 120 + refilled + tolerance, `${passed} passed (refill ${refilled}, tolerance ${tolerance})`);
    // 120 tokens in batches of 6, and a few refusals asked (one each time a node finds the bucket empty again).
    const asked = a.statements() + b.statements();
    assert.ok(asked <= 120 / 6 + 2 + 2 * refilled + 2, `${asked} statements for 200 requests`);
  });
});
