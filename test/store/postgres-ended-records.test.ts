/**
 * What a PostgreSQL node keeps of ended conversions (PostgresStore.getConversion), seen from
 * outside, on a real server with two stores as two nodes: a read of an ended conversion again
 * within a second is answered from what the node kept (a change made behind its back is not in
 * it yet); a queued or running one is read from the database every time; the node's own writes
 * are seen at once, inside and after a transaction; another node's delete or expiry is seen as soon as its notification
 * arrives (long before the second); a change nobody announced (a lost notification) is seen
 * within the second; a succeeded record is never answered past its result's expiry; and a caller
 * that changes what it read changes nothing for the next one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { nodesOnFreshDatabase } from '../helpers/postgres.ts';
import { account, conversion } from '../helpers/store-records.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function succeeded(accountId: string, expiresInMs = 3_600_000): ConversionRecord {
  const now = Date.now();
  return conversion(accountId, {
    status: 'succeeded', progress: 100, credits: 1, finished_at: new Date(now).toISOString(),
    result: { filename: 'photo.webp', size: 10, mime: 'image/webp', expires_at: new Date(now + expiresInMs).toISOString() },
  });
}

describe('PostgreSQL: ended conversions kept for a second', () => {
  let nodes: Awaited<ReturnType<typeof nodesOnFreshDatabase>>;
  let a: PostgresStore;
  let b: PostgresStore;
  let raw: pg.Client;
  let stopFollowing: () => Promise<void>;

  before(async () => {
    nodes = await nodesOnFreshDatabase(2);
    [a, b] = nodes.stores as [PostgresStore, PostgresStore];
    stopFollowing = await a.followChanges(() => undefined);
    raw = new pg.Client({ connectionString: nodes.database.url });
    await raw.connect();
  });
  after(async () => {
    await stopFollowing?.();
    await raw?.end();
    await nodes?.close();
  });

  /** A change behind every node's back, as a node whose notification was lost would make it. */
  async function changeUnannounced(id: string, fields: Partial<ConversionRecord>): Promise<void> {
    await raw.query('UPDATE convd_conversions SET doc = doc || $2::jsonb WHERE id = $1', [id, JSON.stringify(fields)]);
  }

  it('answers an ended conversion from what it kept, a queued one from the database every time', async () => {
    const ended = succeeded('acc_kept');
    const queued = conversion('acc_kept');
    await b.insertConversion(ended);
    await b.insertConversion(queued);
    assert.equal((await a.getConversion(ended.id))?.status, 'succeeded');
    assert.equal((await a.getConversion(queued.id))?.status, 'queued');
    // Changed behind the nodes' backs: a read that went to the database would see it.
    await changeUnannounced(ended.id, { original_name: 'changed.png' });
    await changeUnannounced(queued.id, { original_name: 'changed.png' });
    assert.equal((await a.getConversion(ended.id))?.original_name, 'photo.png', 'the ended one, from what was kept');
    assert.equal((await a.getConversion(queued.id))?.original_name, 'changed.png', 'the queued one, from the database');

    // A queued one moved on by another node is seen at the next read.
    await b.updateConversion(queued.id, { status: 'processing', progress: 40 });
    assert.equal((await a.getConversion(queued.id))?.progress, 40);
  });

  it("sees its own writes at once, inside a transaction and after it", async () => {
    const record = succeeded('acc_own');
    await a.insertConversion(record);
    assert.equal((await a.getConversion(record.id))?.status, 'succeeded');
    await a.exclusive(`conversion:${record.id}`, async (tx) => {
      await tx.updateConversion(record.id, { status: 'expired' });
      assert.equal((await tx.getConversion(record.id))?.status, 'expired', 'inside the transaction');
    });
    assert.equal((await a.getConversion(record.id))?.status, 'expired', 'after the commit');
    await a.updateConversion(record.id, { engine_ms: 1234 });
    assert.equal((await a.getConversion(record.id))?.engine_ms, 1234);
  });

  it("sees another node's delete or expiry as soon as its notification arrives", async () => {
    for (const change of ['outside a transaction', 'inside one'] as const) {
      const record = succeeded('acc_peer');
      await b.insertConversion(record);
      assert.equal((await a.getConversion(record.id))?.status, 'succeeded');
      const changedAt = Date.now();
      if (change === 'outside a transaction') await b.updateConversion(record.id, { status: 'expired' });
      else await b.exclusive(`conversion:${record.id}`, (tx) => tx.updateConversion(record.id, { status: 'expired' }));
      let seen: string | undefined;
      while (Date.now() - changedAt < 500 && (seen = (await a.getConversion(record.id))?.status) !== 'expired') await sleep(5);
      assert.equal(seen, 'expired', `${change}: still ${seen} ${Date.now() - changedAt} ms after the change`);
    }
  });

  it('a change nobody announced is seen within the second', async () => {
    const record = succeeded('acc_lost');
    await b.insertConversion(record);
    assert.equal((await a.getConversion(record.id))?.status, 'succeeded');
    const changedAt = Date.now();
    await changeUnannounced(record.id, { status: 'expired' });
    let seen: string | undefined;
    while (Date.now() - changedAt < 2000 && (seen = (await a.getConversion(record.id))?.status) !== 'expired') await sleep(20);
    assert.equal(seen, 'expired');
    assert.ok(Date.now() - changedAt <= 1100, `seen after ${Date.now() - changedAt} ms`);
  });

  it("a succeeded record is not answered from what was kept once its result's expiry has passed", async () => {
    const record = succeeded('acc_expiry', 300);
    await b.insertConversion(record);
    assert.equal((await a.getConversion(record.id))?.status, 'succeeded');
    await changeUnannounced(record.id, { status: 'expired' });
    await sleep(350);
    assert.equal((await a.getConversion(record.id))?.status, 'expired');
  });

  it('peeks (read at once, the hot read\'s) answer only what the node keeps, while it keeps it', async () => {
    const record = succeeded('acc_peek');
    await b.insertConversion(record);
    assert.equal(a.peek?.conversion(record.id), undefined, 'nothing kept before a read');
    await a.getConversion(record.id);
    assert.equal(a.peek?.conversion(record.id)?.status, 'succeeded');
    await a.updateConversion(record.id, { status: 'expired' });
    assert.equal(a.peek?.conversion(record.id), undefined, 'its own write drops it at once');
    const queued = conversion('acc_peek');
    await b.insertConversion(queued);
    await a.getConversion(queued.id);
    assert.equal(a.peek?.conversion(queued.id), undefined, 'a queued one is never kept');

    const settings = await a.getSettings();
    assert.deepEqual(a.peek?.settings(), settings);
    await a.exclusive('peek', async (tx) => assert.equal(tx.peek, undefined, 'a transaction reads fresh'));
    const kept = succeeded('acc_peek');
    await b.insertConversion(kept);
    await a.getConversion(kept.id);
    await sleep(1050);
    assert.equal(a.peek?.conversion(kept.id), undefined, 'not past its second');
    assert.equal(a.peek?.settings(), undefined);
  });

  it('peeks the key by its hash and its account while kept; this node\'s write drops them at once', async () => {
    const owner = account(`acc_peek_${Date.now()}`, new Date().toISOString());
    await b.putAccount(owner);
    const key = { id: `key_peek_${Date.now()}`, account_id: owner.id, hash: 'cd'.repeat(32), prefix: 'cvk_peek', scopes: ['read' as const], created_at: new Date().toISOString(), revoked_at: null };
    await b.putApiKey(key);
    assert.equal(a.peek?.apiKeyByHash(key.hash), undefined, 'nothing kept before a read');
    await a.findApiKeyByHash(key.hash);
    await a.getAccount(owner.id);
    assert.equal(a.peek?.apiKeyByHash(key.hash)?.id, key.id);
    assert.equal(a.peek?.account(owner.id)?.id, owner.id);
    await a.putApiKey({ ...key, revoked_at: new Date().toISOString() });
    await a.putAccount({ ...owner, name: 'renamed' });
    assert.equal(a.peek?.apiKeyByHash(key.hash), undefined, 'a revocation here: at once');
    assert.equal(a.peek?.account(owner.id), undefined);
    assert.ok((await a.findApiKeyByHash(key.hash))?.revoked_at);
    assert.ok(a.peek?.apiKeyByHash(key.hash)?.revoked_at, 'read again, kept as revoked');
  });

  it('a caller that changes what it read changes nothing for the next reader', async () => {
    const record = succeeded('acc_copy');
    await b.insertConversion(record);
    const first = (await a.getConversion(record.id))!;
    first.status = 'failed';
    first.result = null;
    const second = (await a.getConversion(record.id))!;
    assert.equal(second.status, 'succeeded');
    assert.equal(second.result?.filename, 'photo.webp');
  });
});
