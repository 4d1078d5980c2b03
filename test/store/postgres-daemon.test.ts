/**
 * A real daemon on PostgreSQL (`--database-url`, a database of its own): the first account and its
 * key are made in the database; a PNG becomes a WebP (decoded); idempotent duplicates make one
 * conversion; admin commands with `--database-url` reach the database from outside the daemon (a
 * key revoked there is refused by the daemon at the next request, the maintenance switch holds at
 * once); a second daemon on the same database is refused with a message; the conversion and the
 * account outlive a restart on a new data dir; /readyz says the database answers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { call, newAccount, png, slowPng, submitFile, waitForEnd } from '../helpers/api-support.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { S3_ENV, startS3 } from '../helpers/s3.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';

/** `convd <args> --database-url URL --json`, no data dir named. */
const adminOnDatabase = (url: string, args: string[]) => convdAdmin(null, [...args, '--database-url', url, '--json']);

describe('convd on PostgreSQL', () => {
  let database: TestDatabase;
  let daemon: DaemonHandle;
  before(async () => {
    database = await freshDatabase();
    daemon = await startDaemon({ args: ['--database-url', database.url, '--workers', '2'] });
  });
  after(async () => {
    await daemon?.dispose();
    await database?.drop();
  });

  it('converts, replays an idempotent request, and says in /readyz that the database answers', async () => {
    const image = await png(64, 48);
    const headers = { 'idempotency-key': 'pg-once' };
    const answers = await Promise.all(Array.from({ length: 8 }, () => submitFile(daemon, { target: 'webp' }, { data: image, name: 'pic.png' }, headers)));
    const created = new Set(answers.map((a) => a.body.id));
    assert.equal(created.size, 1, 'one conversion for eight identical requests');
    const done = await waitForEnd(daemon, [...created][0]!);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const download = await fetch(`${daemon.baseUrl}/conversions/${done.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 64, 48]);
    const ready = await fetch(`${daemon.url}/readyz`);
    const report = (await ready.json()) as { checks: { store: { ok: boolean; detail: string } } };
    assert.equal(report.checks.store.ok, true);
    assert.equal(report.checks.store.detail, 'database answers');
  });

  it('admin commands reach the database from outside: a revoked key is refused at once, maintenance holds', async () => {
    const account = await adminOnDatabase(database.url, ['accounts', 'create', '--plan', 'lite', '--name', 'outside']);
    assert.equal(account.code, 0, account.stderr);
    const accountId = (account.json as { id: string }).id;
    const key = await adminOnDatabase(database.url, ['keys', 'create', '--account', accountId, '--scopes', 'read,convert']);
    assert.equal(key.code, 0, key.stderr);
    const made = key.json as { id: string; key: string };
    const client = { baseUrl: daemon.baseUrl, apiKey: made.key };
    assert.equal((await call(client, '/account')).status, 200, 'the daemon knows a key made beside it');
    assert.equal((await adminOnDatabase(database.url, ['keys', 'revoke', made.id])).code, 0);
    // Within a second (the daemon keeps what every request reads for one).
    let revokedAt = Date.now();
    await waitUntil('the revoked key refused', async () => ((await call(client, '/account')).status === 401 ? true : undefined), 3000);
    assert.ok(Date.now() - revokedAt <= 1500, `refused ${Date.now() - revokedAt} ms after the revocation`);

    assert.equal((await adminOnDatabase(database.url, ['maintenance', 'on', '--retry-after', '30'])).code, 0);
    try {
      revokedAt = Date.now();
      const refused = await waitUntil('maintenance seen', async () => {
        const answer = await call(daemon, '/account');
        return answer.status === 503 ? answer : undefined;
      }, 3000);
      assert.ok(Date.now() - revokedAt <= 1500);
      assert.equal(refused.headers.get('retry-after'), '30');
    } finally {
      assert.equal((await adminOnDatabase(database.url, ['maintenance', 'off'])).code, 0);
    }
    await waitUntil('maintenance off seen', async () => ((await call(daemon, '/account')).status === 200 ? true : undefined), 3000);
  });

  it('a poll of a finished conversion, answered from what the node keeps, sees a revocation and maintenance made outside within a second', async () => {
    const account = await adminOnDatabase(database.url, ['accounts', 'create', '--plan', 'pro', '--name', 'poller']);
    const accountId = (account.json as { id: string }).id;
    const made = (await adminOnDatabase(database.url, ['keys', 'create', '--account', accountId, '--scopes', 'read,convert'])).json as { id: string; key: string };
    const client = { baseUrl: daemon.baseUrl, apiKey: made.key };
    const created = await submitFile(client, { target: 'webp', wait: '30' }, { data: await png(16, 16), name: 'poll.png' });
    assert.equal(created.body.status, 'succeeded');
    const path = `/conversions/${created.body.id}`;
    // Polled again and again: the key, its account, the switch and the record kept, answered at once.
    for (let i = 0; i < 20; i++) assert.equal((await call(client, path)).status, 200);

    assert.equal((await adminOnDatabase(database.url, ['maintenance', 'on', '--retry-after', '30'])).code, 0);
    try {
      const changedAt = Date.now();
      await waitUntil('maintenance seen by the poll', async () => ((await call(client, path)).status === 503 ? true : undefined), 3000);
      assert.ok(Date.now() - changedAt <= 1500, `seen ${Date.now() - changedAt} ms after`);
    } finally {
      assert.equal((await adminOnDatabase(database.url, ['maintenance', 'off'])).code, 0);
    }
    await waitUntil('maintenance off seen by the poll', async () => ((await call(client, path)).status === 200 ? true : undefined), 3000);
    for (let i = 0; i < 20; i++) assert.equal((await call(client, path)).status, 200);

    assert.equal((await adminOnDatabase(database.url, ['keys', 'revoke', made.id])).code, 0);
    const revokedAt = Date.now();
    await waitUntil('the revoked key refused by the poll', async () => ((await call(client, path)).status === 401 ? true : undefined), 3000);
    assert.ok(Date.now() - revokedAt <= 1500, `refused ${Date.now() - revokedAt} ms after the revocation`);
  });

  it('a second daemon on the same database is refused; the store outlives a restart on a new data dir', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'convd-pg-second-'));
    try {
      await assert.rejects(
        startDaemon({ args: ['--database-url', database.url], dataDir, apiKey: daemon.apiKey, accountId: daemon.accountId }),
        /another convd daemon uses this database/,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
    const listed = await call<{ data: { id: string; status: string }[] }>(daemon, '/conversions');
    const first = listed.body.data[0]!;
    await daemon.stop();
    await rm(daemon.dataDir, { recursive: true, force: true });
    const freshDir = await mkdtemp(join(tmpdir(), 'convd-pg-restart-'));
    daemon = await startDaemon({ args: ['--database-url', database.url], dataDir: freshDir, apiKey: daemon.apiKey, accountId: daemon.accountId });
    const again = await call(daemon, `/conversions/${first.id}`);
    assert.equal(again.status, 200, 'the key and the conversion are in the database, not the data dir');
    assert.equal(again.body.status, first.status);
  });
});

describe('convd on PostgreSQL and a bucket, killed (-9) mid-work', () => {
  it('restarted, it takes back the queue from the database (leases of the dead process cleared) and every conversion succeeds once', async () => {
    const database = await freshDatabase();
    const bucket = await startS3();
    const stores = ['--database-url', database.url, '--blob-url', bucket.blobUrl('crash'), '--workers', '1'];
    let daemon = await startDaemon({ args: stores, env: S3_ENV });
    try {
      const tenant = await newAccount(daemon, 'lite', { credits: 100 });
      const image = await slowPng(2200);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const made = await submitFile(tenant, { target: 'webp' }, { data: image, name: `crash-${i}.png` });
        assert.equal(made.status, 202, JSON.stringify(made.body));
        ids.push(made.body.id);
      }
      await waitUntil('one conversion running, work queued behind it', async () => {
        const list = (await call<{ data: { status: string }[] }>(tenant, '/conversions?limit=10')).body.data;
        return list.some((c) => c.status === 'processing') && list.some((c) => c.status === 'queued') ? true : undefined;
      }, 60_000);
      await daemon.kill();
      daemon = await daemon.restart();
      const ended = [];
      for (const id of ids) ended.push(await waitForEnd({ baseUrl: daemon.baseUrl, apiKey: tenant.apiKey }, id));
      assert.deepEqual(ended.map((c) => c.status), ids.map(() => 'succeeded'), JSON.stringify(ended.map((c) => c.error)));
      const charged = ended.reduce((sum, c) => sum + c.credits, 0);
      const account = (await call<{ credits: { remaining: number } }>({ baseUrl: daemon.baseUrl, apiKey: tenant.apiKey }, '/account')).body;
      assert.equal(account.credits.remaining, 100 - charged, 'each charged once');
      // Each input goes once its end is stored, a moment after the answer.
      await waitUntil('inputs gone with their ends', async () => ((await bucket.keys('crash/inputs/')).filter((key) => !key.endsWith('.keep')).length === 0 ? true : undefined), 5000);
    } finally {
      await daemon.dispose();
      await bucket.close();
      await database.drop();
    }
  });
});
