/**
 * A node of a cluster (PostgreSQL and a bucket) killed with kill -9 while it runs a long
 * conversion and started again on the same data dir: it is the same node (its id is kept in the
 * data dir, and is the one its lease was held under), so it takes its lease back at start and
 * runs the conversion again at once, rather than once the lease has run out (a minute here).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { NODE_ID_FILE } from '../../src/queue/node-id.ts';
import { newAccount, slowPng, submitFile, waitForEnd } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { parseLogLines, waitUntil } from '../helpers/ops-support.ts';

const LEASE_MS = 60_000;

describe('a node of a cluster restarted on its data dir', () => {
  let database: TestDatabase;
  let bucket: TestBucket;
  const started: DaemonHandle[] = [];
  before(async () => {
    database = await freshDatabase();
    bucket = await startS3('convd-restart');
    await bucket.keepDirs('restart');
  });
  after(async () => {
    for (const node of started) await node.dispose();
    await bucket?.close();
    await database?.drop();
  });

  it('keeps its node id and takes its lease back at start, not when the lease runs out', async () => {
    const args = ['--database-url', database.url, '--blob-url', bucket.blobUrl('restart'), '--workers', '1', '--lease-timeout', `${LEASE_MS / 1000}s`];
    const node = await startDaemon({ args, env: S3_ENV });
    started.push(node);
    const nodeId = (await readFile(join(node.dataDir, NODE_ID_FILE), 'utf8')).trim();
    const tenant = await newAccount(node, 'pro', { credits: 100 });
    const made = await submitFile(tenant, { target: 'avif' }, { data: await slowPng(1000), name: 'long.png' });
    assert.equal(made.status, 202, JSON.stringify(made.body));
    const id = String(made.body.id);
    await waitUntil('the conversion running', () => (parseLogLines(node.stderr()).some((line) => line.event === 'conversion' && line.id === id && line.to === 'processing') ? true : undefined), 30_000);

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const lease = async () => (await db.query<{ lease_node: string | null; lease_until: Date | null }>('SELECT lease_node, lease_until FROM convd_conversions WHERE id = $1', [id])).rows[0]!;
      assert.equal((await lease()).lease_node, nodeId, 'held under the id in the data dir');
      await node.kill();
      const killedAt = Date.now();
      const leaseRunsOut = (await lease()).lease_until!.getTime();
      assert.ok(leaseRunsOut - killedAt > LEASE_MS / 2, 'the lease has most of its minute left');

      const again = await node.restart();
      started.push(again);
      assert.equal((await readFile(join(again.dataDir, NODE_ID_FILE), 'utf8')).trim(), nodeId, 'the same id');
      const ended = await waitForEnd({ ...tenant, baseUrl: again.baseUrl }, id);
      // On a failure, the daemon's own account of it (an internal error's stack is only in its log).
      assert.equal(ended.status, 'succeeded', `${JSON.stringify(ended.error)}\n${again.stderr().split('\n').filter((line) => line.includes('error')).join('\n')}`);
      assert.ok(Date.parse(ended.finished_at!) < leaseRunsOut, `ended ${Date.parse(ended.finished_at!) - killedAt} ms after the kill, before the lease would have run out`);
      const told = parseLogLines(again.stderr());
      assert.ok(told.some((line) => line.event === 'queue.leases_taken_back' && line.leases === 1), again.stderr());
      assert.ok(told.some((line) => line.event === 'conversion.requeued' && line.id === id));
    } finally {
      await db.end();
    }
  });
});
