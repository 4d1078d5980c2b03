/**
 * Start-up recovery of a cluster's webhooks: three nodes start at once on a database whose
 * recently ended conversions have a callback but no delivery yet (what a crash between an end and
 * its delivery record leaves). Every node's recovery offers each of those ends again, at the same
 * moment as the others: each end is delivered once, under one delivery id, and the database holds
 * one delivery per end. An end older than the retry schedule is not offered at all (recovery
 * reads the recent ends only).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { conversion, DAY, HOUR } from '../helpers/store-records.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { sleep, startReceiver, type Receiver } from '../helpers/webhooks-receiver.ts';

/** Ended conversions waiting for their webhook: many, so that the three recoveries overlap. */
const ENDS = 200;

describe('three nodes starting at once recover the webhooks of recent ends once', () => {
  let database: TestDatabase;
  let bucket: TestBucket;
  let receiver: Receiver;
  const started: DaemonHandle[] = [];
  before(async () => {
    database = await freshDatabase();
    bucket = await startS3('convd-start-recovery');
    await bucket.keepDirs('recovery');
    receiver = await startReceiver({ tls: false, respond: () => ({ status: 200 }) });
  });
  after(async () => {
    for (const node of started) await node.dispose();
    await receiver?.close();
    await bucket?.close();
    await database?.drop();
  });

  it('each recent end is delivered once, under one delivery id; an old end is not offered', async () => {
    const args = ['--database-url', database.url, '--blob-url', bucket.blobUrl('recovery'), '--workers', '1', '--allow-insecure-callbacks'];
    // A first start makes the schema and the account (and its webhook secret).
    const first = await startDaemon({ args, env: S3_ENV });
    started.push(first);
    await first.stop();

    const store = await PostgresStore.open({ url: database.url, poolSize: 2 });
    const recent: string[] = [];
    try {
      const now = Date.now();
      for (let i = 0; i < ENDS; i++) {
        const finishedAt = new Date(now - 60_000 - i * 100).toISOString();
        const succeeded = i % 2 === 0;
        const record = conversion(first.accountId, {
          status: succeeded ? 'succeeded' : 'failed', reserved_credits: 0, finished_at: finishedAt, callback_url: receiver.url('/recent'),
          ...(succeeded
            ? { credits: 1, charged_at: finishedAt, result: { filename: 'photo.webp', size: 10, mime: 'image/webp', expires_at: new Date(now + DAY).toISOString() } }
            : { error: { code: 'conversion_failed', message: 'no' } }),
        });
        await store.insertConversion(record);
        recent.push(record.id);
      }
      // Ended before the whole retry schedule (about 91 minutes): its webhook is long settled.
      const longAgo = new Date(now - 3 * HOUR).toISOString();
      await store.insertConversion(conversion(first.accountId, { status: 'failed', reserved_credits: 0, finished_at: longAgo, created_at: longAgo, callback_url: receiver.url('/old') }));
    } finally {
      await store.close();
    }

    const known = { apiKey: first.apiKey, accountId: first.accountId, env: S3_ENV };
    await Promise.all([0, 1, 2].map(() => startDaemon({ ...known, args }).then((node) => {
      started.push(node);
      return node;
    })));

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      await waitUntil('every recent end delivered', async () => {
        const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM convd_deliveries WHERE status = 'delivered'");
        return Number(rows[0]!.n) >= ENDS && receiver.requests.length >= ENDS ? true : undefined;
      }, 30_000);
      // Room for a second delivery of any end to arrive.
      await sleep(1000);
      const { rows } = await db.query<{ conversion_id: string; n: string }>('SELECT conversion_id, count(*) AS n FROM convd_deliveries GROUP BY conversion_id');
      assert.deepEqual(rows.filter((row) => Number(row.n) !== 1), [], 'one delivery per end in the database');
      assert.deepEqual(rows.map((row) => row.conversion_id).sort(), [...recent].sort(), 'the recent ends, not the old one');
    } finally {
      await db.end();
    }
    const byEnd = new Map<string, Set<string>>();
    for (const request of receiver.requests) {
      assert.equal(request.path, '/recent', 'nothing for the old end');
      const id = (JSON.parse(request.body.toString('utf8')) as { data: { id: string } }).data.id;
      const deliveries = byEnd.get(id) ?? new Set<string>();
      deliveries.add(String(request.headers['x-service-delivery']));
      byEnd.set(id, deliveries);
    }
    assert.equal(receiver.requests.length, ENDS, 'each end sent once');
    assert.equal(byEnd.size, ENDS);
    assert.deepEqual([...byEnd.values()].filter((ids) => ids.size !== 1), [], 'one delivery id per end');
  });
});
