/**
 * Three convd processes on one PostgreSQL database and one S3 bucket (s3rver), requests spread
 * over them in turn: 50 identical idempotent submissions make one conversion; 30 submissions
 * racing for the credits of 10 pass 10; requests per minute are the plan's over all nodes; an API-only node (`--workers 0`) answers `wait` the
 * moment another node finishes (NOTIFY) and serves the result from the bucket; kill -9 of a node
 * while conversions run: every one ends `succeeded` on the others within the lease plus its run
 * time, each charged once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { call, newAccount, png, slowPng, submitFile, waitForEnd, type Client } from './api-support.ts';
import { startDaemon, type DaemonHandle } from './helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from './helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from './helpers/s3.ts';
import { waitUntil } from './ops-support.ts';

const LEASE = '3s';

describe('a cluster of three nodes on one database and one bucket', () => {
  let database: TestDatabase;
  let bucket: TestBucket;
  const nodes: DaemonHandle[] = [];
  before(async () => {
    database = await freshDatabase();
    bucket = await startS3();
    await bucket.keepDirs('cluster');
    const shared = ['--database-url', database.url, '--blob-url', bucket.blobUrl('cluster'), '--lease-timeout', LEASE];
    const first = await startDaemon({ args: [...shared, '--workers', '1'], env: S3_ENV });
    nodes.push(first);
    const known = { apiKey: first.apiKey, accountId: first.accountId, env: S3_ENV };
    nodes.push(await startDaemon({ ...known, args: [...shared, '--workers', '1'] }));
    // An API-only node: whatever it is asked to convert runs on the other two.
    nodes.push(await startDaemon({ ...known, args: [...shared, '--workers', '0'] }));
  });
  after(async () => {
    for (const node of nodes) await node.dispose();
    await bucket?.close();
    await database?.drop();
  });

  /** The same key on node `i % 3`: a load balancer's round robin. */
  const on = (client: Client, i: number): Client => ({ ...client, baseUrl: nodes[i % nodes.length]!.baseUrl });

  it('50 identical idempotent submissions over the three nodes make one conversion', async () => {
    const tenant = await newAccount(nodes[0]!, 'pro', { credits: 100 });
    const image = await png(32, 24);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      submitFile(on(tenant, i), { target: 'webp' }, { data: image, name: 'once.png' }, { 'idempotency-key': 'cluster-once' })));
    for (const answer of answers) assert.ok(answer.status === 202 || answer.status === 200, JSON.stringify(answer.body));
    assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
    const done = await waitForEnd(tenant, answers[0]!.body.id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const listed = await call<{ data: unknown[] }>(tenant, '/conversions?limit=100');
    assert.equal(listed.body.data.length, 1);
  });

  it('30 submissions racing over the three nodes for the credits of 10 pass 10', async () => {
    const tenant = await newAccount(nodes[1]!, 'pro', { credits: 10 });
    const image = await png(16, 16);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => submitFile(on(tenant, i), { target: 'webp' }, { data: image, name: `race-${i}.png` })));
    const accepted = answers.filter((a) => a.status === 202);
    assert.equal(accepted.length, 10, answers.map((a) => a.status).join(','));
    for (const refused of answers.filter((a) => a.status !== 202)) assert.equal(refused.status, 402, JSON.stringify(refused.body));
    for (const answer of accepted) assert.equal((await waitForEnd(tenant, answer.body.id)).status, 'succeeded');
    const account = await call<{ credits: { remaining: number } }>(tenant, '/account');
    assert.equal(account.body.credits.remaining, 0);
  });

  it('requests per minute are counted over the nodes: 45 requests spread over three pass the plan\'s 30', async () => {
    const tenant = await newAccount(nodes[0]!, 'free');
    const started = Date.now();
    const answers = [];
    for (let i = 0; i < 45; i++) answers.push(await call(on(tenant, i), '/account'));
    const passed = answers.filter((a) => a.status === 200).length;
    // The bucket refills at 30 a minute: what the requests' own time gave back may pass too.
    const refilled = Math.ceil(((Date.now() - started) / 60_000) * 30);
    assert.ok(passed >= 30 && passed <= 30 + refilled, `${passed} passed (refill ${refilled})`);
    const refused = answers.find((a) => a.status === 429)!;
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  });

  it('an API-only node answers wait when another node finishes, and serves the result from the bucket', async () => {
    const apiOnly = { baseUrl: nodes[2]!.baseUrl, apiKey: nodes[0]!.apiKey };
    const made = await submitFile(apiOnly, { target: 'webp', wait: '30' }, { data: await png(90, 60), name: 'elsewhere.png' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal(made.body.status, 'succeeded', 'wait answered with the end another node reached');
    const download = await fetch(`${apiOnly.baseUrl}/conversions/${made.body.id}/download`, { headers: { authorization: `Bearer ${apiOnly.apiKey}` } });
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 90, 60]);
  });

  it('kill -9 of a node mid-work: the others finish every conversion within the lease, each charged once', async () => {
    const tenant = await newAccount(nodes[0]!, 'pro', { credits: 100 });
    const viaApiOnly: Client = { ...tenant, baseUrl: nodes[2]!.baseUrl };
    const image = await slowPng(1400);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const made = await submitFile(viaApiOnly, { target: 'avif' }, { data: image, name: `long-${i}.png` });
      assert.equal(made.status, 202, JSON.stringify(made.body));
      ids.push(made.body.id);
    }
    await waitUntil('both working nodes busy', async () => {
      const list = (await call<{ data: { status: string }[] }>(viaApiOnly, '/conversions?limit=10')).body.data;
      return list.filter((c) => c.status === 'processing').length >= 2 ? true : undefined;
    }, 60_000);
    await nodes[1]!.kill();
    const ended = [];
    for (const id of ids) ended.push(await waitForEnd(viaApiOnly, id));
    assert.deepEqual(ended.map((c) => c.status), ids.map(() => 'succeeded'), JSON.stringify(ended.map((c) => c.error)));
    const charged = ended.reduce((sum, c) => sum + c.credits, 0);
    assert.ok(charged > 0);
    assert.equal((await call<{ credits: { remaining: number } }>(viaApiOnly, '/account')).body.credits.remaining, 100 - charged, 'each charged once');
    const survivors = nodes[0]!.stderr() + nodes[2]!.stderr();
    assert.match(survivors, /queue\.lease_expired/, 'a survivor took the dead node\'s conversion over');
    assert.match(survivors, /conversion\.requeued/);
    const metrics = await (await fetch(`${nodes[0]!.url}/metrics`)).text();
    assert.match(metrics, /^convd_leases_held 0$/m, 'the survivor holds no lease once all ended');
    assert.match(metrics, /^convd_queue_depth 0$/m);
  });
});
