/**
 * Three convd processes on one PostgreSQL database and one S3 bucket (s3rver), requests spread
 * over them in turn: 50 identical idempotent submissions make one conversion; 30 submissions
 * racing for the credits of 10 pass 10; requests per minute are the plan's over all nodes; an
 * API-only node (`--workers 0`) answers `wait` the moment another node finishes (NOTIFY) and
 * serves the result from the bucket, and `conv convert --wait` against it downloads a result
 * another node made; a result deleted on one node is expired on the others at once (NOTIFY),
 * though each had just read it as succeeded. A fourth node with six workers joins for the
 * crashes: kill -9 of it while it runs 5 long conversions: every one ends `succeeded` on the
 * others within the lease plus their run time, each charged once; kill -9 of the node that made a webhook's failed first attempt
 * (and holds its retry): another node sends the retry once that claim runs out, with the same
 * delivery id, and the receiver sees no third request.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { call, newAccount, png, slowPng, submitFile, waitForEnd, type Client } from '../helpers/api-support.ts';
import { cleanEnv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { parseLogLines, waitUntil } from '../helpers/ops-support.ts';
import { startReceiver } from '../helpers/webhooks-receiver.ts';

const LEASE_MS = 3000;
const LEASE = `${LEASE_MS / 1000}s`;
/** A webhook's first retry 1 min x this after the first attempt: 1.2 s (±10 %), well after the kill that follows it. */
const WEBHOOK_SCALE = 0.02;

/** The conversions a node moved into `status`, by its log (each node logs the transitions it makes). */
function movedTo(node: DaemonHandle, status: string): Set<string> {
  return new Set(parseLogLines(node.stderr()).filter((line) => line.event === 'conversion' && line.to === status).map((line) => String(line.id)));
}

describe('a cluster on one database and one bucket: three nodes, and a fourth for the crashes', () => {
  let database: TestDatabase;
  let bucket: TestBucket;
  const nodes: DaemonHandle[] = [];
  /** Runs the crashes' five long conversions; not among the three that requests are spread over. */
  let busy: DaemonHandle;
  /** Every node started, for the clean-up (a start that fails leaves the others running). */
  const started: DaemonHandle[] = [];
  before(async () => {
    database = await freshDatabase();
    bucket = await startS3();
    await bucket.keepDirs('cluster');
    const shared = ['--database-url', database.url, '--blob-url', bucket.blobUrl('cluster'), '--lease-timeout', LEASE, '--allow-insecure-callbacks'];
    const env = { ...S3_ENV, CONVD_WEBHOOK_SCHEDULE_SCALE: String(WEBHOOK_SCALE) };
    const first = await startDaemon({ args: [...shared, '--workers', '1'], env });
    started.push(first);
    nodes.push(first);
    const known = { apiKey: first.apiKey, accountId: first.accountId, env };
    const [second, apiOnly, six] = await Promise.all([
      startDaemon({ ...known, args: [...shared, '--workers', '1'] }),
      // An API-only node: whatever it is asked to convert runs on another.
      startDaemon({ ...known, args: [...shared, '--workers', '0'] }),
      // A tenant may hold every worker of a node but one: six let it run five at once.
      startDaemon({ ...known, args: [...shared, '--workers', '6'] }),
    ].map((starting) => starting.then((node) => {
      started.push(node);
      return node;
    })));
    nodes.push(second, apiOnly);
    busy = six;
  });
  after(async () => {
    for (const node of started) await node.dispose();
    await bucket?.close();
    await database?.drop();
  });

  /** The same key on node `i % 3`: a load balancer's round robin. */
  const on = (client: Client, i: number): Client => ({ ...client, baseUrl: nodes[i % nodes.length]!.baseUrl });
  /** The nodes not killed yet. */
  const alive = () => started.filter((node) => node.process.exitCode === null && node.process.signalCode === null);

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

  it('failed sign-ins on the web pages are counted over the nodes: five wrong passwords, then a wait on every node', async () => {
    const attempt = (i: number) => {
      const node = nodes[i % nodes.length]!;
      return fetch(`${node.url}/signin`, {
        method: 'POST', headers: { origin: node.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ name: 'mallory-target', password: `guess number ${i}` }),
      });
    };
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await attempt(i)).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
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

  it('a result deleted on one node is expired on every other at once, though each had just read it as succeeded', async () => {
    const client = { baseUrl: nodes[0]!.baseUrl, apiKey: nodes[0]!.apiKey };
    const made = await submitFile(client, { target: 'webp', wait: '30' }, { data: await png(40, 30), name: 'deleted.png' });
    assert.equal(made.body.status, 'succeeded', JSON.stringify(made.body));
    // Every node reads it twice: each now keeps the ended conversion (for a second at most).
    for (let i = 0; i < 6; i++) assert.equal((await call<{ status: string }>(on(client, i), `/conversions/${made.body.id}`)).body.status, 'succeeded');
    const deleted = await call<{ status: string }>(on(client, 1), `/conversions/${made.body.id}`, { method: 'DELETE' });
    assert.equal(deleted.body.status, 'expired');
    const deletedAt = Date.now();
    for (const i of [0, 2]) {
      const download = await fetch(`${nodes[i]!.baseUrl}/conversions/${made.body.id}/download`, { headers: { authorization: `Bearer ${client.apiKey}` } });
      assert.equal(download.status, 410, `node ${i}: the deleted result's download`);
      await download.arrayBuffer();
      let status = '';
      while (Date.now() - deletedAt < 1000 && (status = (await call<{ status: string }>(on(client, i), `/conversions/${made.body.id}`)).body.status) !== 'expired') await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(status, 'expired', `node ${i}`);
    }
    // The notification, not the second: both nodes saw it well before their copies ran out.
    assert.ok(Date.now() - deletedAt < 500, `seen on both after ${Date.now() - deletedAt} ms`);
  });

  it('conv convert --wait against the API-only node downloads what another node made', async () => {
    const dir = await tempDir('conv-cluster-');
    try {
      await writeFile(join(dir.path, 'across.png'), await png(70, 50));
      const env = cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: join(dir.path, 'config'), CONV_BASE_URL: nodes[2]!.baseUrl, CONV_API_KEY: nodes[0]!.apiKey });
      const result = await spawnConv(['convert', 'across.png', '--to', 'webp', '--wait', '-o', 'across.webp', '--json'], { env, cwd: dir.path });
      assert.equal(result.code, 0, result.stderr);
      const converted = JSON.parse(result.stdout) as { id: string; status: string };
      assert.equal(converted.status, 'succeeded');
      const meta = await sharp(await readFile(join(dir.path, 'across.webp'))).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 70, 50]);
      await waitUntil('the log of the node that ran it', () => [nodes[0]!, nodes[1]!, busy].find((node) => movedTo(node, 'succeeded').has(converted.id)), 5000);
    } finally {
      await dir.remove();
    }
  });

  it('kill -9 of the node running 5 long conversions: the others finish every one within the lease plus their run time, each charged once', async () => {
    const tenant = await newAccount(nodes[0]!, 'pro', { credits: 100 });
    const viaApiOnly: Client = { ...tenant, baseUrl: nodes[2]!.baseUrl };
    // About a second of AVIF alone, a few seconds with five at once on two cores.
    const image = await slowPng(1000);
    const survivors = [nodes[0]!, nodes[1]!];
    // Every working node is held still (SIGSTOP) while the five are uploaded: the busy node then
    // takes all five at once (the survivors' idle workers would take some, and uploads one after
    // another would start them apart); the survivors go on once it has, before it dies.
    for (const node of [...survivors, busy]) node.process.kill('SIGSTOP');
    let ids: string[];
    try {
      const made = await Promise.all(Array.from({ length: 5 }, (_, i) => submitFile(viaApiOnly, { target: 'avif' }, { data: image, name: `long-${i}.png` })));
      for (const answer of made) assert.equal(answer.status, 202, JSON.stringify(answer.body));
      ids = made.map((answer) => answer.body.id);
      busy.process.kill('SIGCONT');
      // Its log, not the API, is watched: polling would spend the plan's requests per minute.
      await waitUntil('all five started on the busy node', () => (ids.every((id) => movedTo(busy, 'processing').has(id)) ? true : undefined), 60_000);
      // The log line is written inside the start's transaction, a moment before its commit: the
      // listing (another node, the database) may still show the last one queued for that moment.
      let processing: string[] = [];
      for (let attempt = 0; attempt < 20; attempt++) {
        const list = await call<{ data: { id: string; status: string }[] }>(viaApiOnly, '/conversions?limit=10');
        processing = list.body.data.filter((c) => c.status === 'processing').map((c) => c.id).sort();
        if (processing.length === ids.length) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(processing, [...ids].sort(), 'all five processing at once');
    } finally {
      for (const node of [...survivors, busy]) node.process.kill('SIGCONT');
    }
    await busy.kill();
    const killedAt = Date.now();
    assert.deepEqual([...movedTo(busy, 'succeeded')].filter((id) => ids.includes(id)), [], 'none ended before the kill');

    const ended = [];
    for (const id of ids) ended.push(await waitForEnd(viaApiOnly, id));
    assert.deepEqual(ended.map((c) => c.status), ids.map(() => 'succeeded'), JSON.stringify(ended.map((c) => c.error)));
    // A log line is written up to 20 ms after the transition it tells of.
    const finishedBy = await waitUntil('every end in a survivor\'s log', () => {
      const done = survivors.map((node) => movedTo(node, 'succeeded'));
      return ids.every((id) => done.some((by) => by.has(id))) ? done : undefined;
    }, 5000);
    for (const id of ids) assert.equal(finishedBy.filter((done) => done.has(id)).length, 1, `${id} succeeded on one survivor`);
    // Two survivors' workers run the five one after another at worst: the last ends within the
    // lease (and a look for expired ones, a third of it) plus the sum of their runs there.
    const runs = ended.reduce((sum, c) => sum + Date.parse(c.finished_at!) - Date.parse(c.started_at!), 0);
    const last = Math.max(...ended.map((c) => Date.parse(c.finished_at!)));
    const slack = 5000;
    assert.ok(last - killedAt <= LEASE_MS * 4 / 3 + runs + slack, `the last ended ${last - killedAt} ms after the kill; runs ${runs} ms`);

    const charged = ended.reduce((sum, c) => sum + c.credits, 0);
    assert.ok(ended.every((c) => c.credits > 0));
    assert.equal((await call<{ credits: { remaining: number } }>(viaApiOnly, '/account')).body.credits.remaining, 100 - charged, 'each charged once');
    // Whichever live node looks first takes them over and re-queues them, the API-only one too
    // (it has no workers, but it reaps); the survivors' workers then run them.
    const told = alive().map((node) => node.stderr()).join('');
    assert.match(told, /queue\.lease_expired/, 'a live node took the dead node\'s conversions over');
    assert.match(told, /conversion\.requeued/);
    // A worker lets go of its lease a moment after the end is told, and the queue's depth is the
    // database's count of a few seconds ago: both read 0 soon after.
    await waitUntil('the survivor holds no lease and sees an empty queue', async () => {
      const metrics = await (await fetch(`${nodes[0]!.url}/metrics`)).text();
      return /^convd_leases_held 0$/m.test(metrics) && /^convd_queue_depth 0$/m.test(metrics) ? true : undefined;
    }, 15_000);
  });

  it('a webhook is delivered once, with one delivery id, when the node that scheduled its retry is killed', async () => {
    // 500 to the first attempt, 204 to any later one.
    const receiver = await startReceiver({ tls: false, respond: (_request, index) => ({ status: index === 0 ? 500 : 204 }) });
    try {
      const tenant = await newAccount(nodes[2]!, 'pro', { credits: 10 });
      const viaApiOnly: Client = { ...tenant, baseUrl: nodes[2]!.baseUrl };
      const made = await submitFile(viaApiOnly, { target: 'webp', callback_url: receiver.url('/once') }, { data: await png(20, 20), name: 'hooked.png' });
      assert.equal(made.status, 202, JSON.stringify(made.body));
      const attempts = (node: DaemonHandle, message: string) => parseLogLines(node.stderr())
        .filter((line) => line.event === 'webhook.info' && line.message === message && line.conversion === made.body.id);
      // The node that recorded the failed first attempt holds the retry.
      const scheduler = await waitUntil('the failed first attempt', () => alive().find((node) => attempts(node, 'webhook attempt failed').length > 0), 30_000);
      await scheduler.kill();
      const others = alive();
      assert.equal(receiver.requests.length, 1, 'the retry was not sent before the kill');
      const sender = await waitUntil('the retry delivered', () => others.find((node) => attempts(node, 'webhook delivered').length > 0), 30_000);
      // The other nodes have all looked for pending deliveries again since (every lease).
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 500));
      assert.equal(receiver.requests.length, 2, 'the failed first attempt and one retry: no third request');
      const [first, retry] = receiver.requests;
      const delivery = first!.headers['x-service-delivery'];
      assert.match(String(delivery), /^[0-9a-f-]{36}$/);
      assert.equal(retry!.headers['x-service-delivery'], delivery, 'the retry carries the same delivery id');
      assert.equal(attempts(scheduler, 'webhook attempt failed')[0]!.delivery, delivery);
      assert.deepEqual(others.filter((node) => attempts(node, 'webhook delivered').length > 0), [sender], 'one node sent the retry');
      // Not before the dead node's claim ran out: the retry's time (1.2 s) plus the lease.
      assert.ok(retry!.atMs - first!.atMs >= LEASE_MS, `the retry came ${Math.round(retry!.atMs - first!.atMs)} ms after the first attempt`);
    } finally {
      await receiver.close();
    }
  });
});
