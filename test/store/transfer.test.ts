/**
 * Moving a box: a daemon on the embedded store converts and charges; `convd store export
 * --with-files` is refused while it runs and writes its store (1,000 conversions and webhook
 * deliveries) and files once it is stopped; `convd store import` reads them into PostgreSQL and a
 * new data dir, twice with the same outcome, and into another database with its files in a
 * bucket; a daemon on the first database and two nodes on the second then each know every key,
 * the balance, the conversions (all of them, page by page) and serve the result; an import while
 * the daemon runs is refused, and so is one beside a running node of a cluster (database and
 * bucket), which goes through once the node stopped; a damaged export is refused in words.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import sharp from 'sharp';
import { call, newAccount, png, submitFile, waitForEnd, type Client, type PublicConversion } from '../helpers/api-support.ts';
import { callAdminSocket } from '../../daemon/admin/socket.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { conversion, HOUR } from '../helpers/store-records.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';

/** Conversions in the box's store: two pages of the export (500 each), the last one full. */
const CONVERSIONS = 1000;
/** The older ones, written into the store: all but the one the daemon converts. */
const HISTORY = CONVERSIONS - 1;

interface AccountView {
  credits: { remaining: number };
}

interface Page {
  data: PublicConversion[];
  next_cursor: string | null;
}

describe('convd store export and import', () => {
  let database: TestDatabase;
  let work: string;
  let first: DaemonHandle;
  /** The daemons on the imported stores. */
  const moved: DaemonHandle[] = [];
  /** The second import's: a database with its files in a bucket, which several nodes share. */
  let shared: { database: TestDatabase; bucket: TestBucket } | undefined;
  before(async () => {
    database = await freshDatabase();
    work = await mkdtemp(join(tmpdir(), 'convd-transfer-'));
    first = await startDaemon({ args: ['--workers', '2'] });
  });
  after(async () => {
    for (const daemon of moved) await daemon.dispose();
    await first?.dispose();
    await rm(work, { recursive: true, force: true });
    await database?.drop();
    await shared?.database.drop();
    await shared?.bucket.close();
  });

  it('moves keys, balance, history and results from the first box into PostgreSQL, idempotently', async () => {
    const tenant = await newAccount(first, 'lite', { credits: 50 });
    const made = await submitFile(tenant, { target: 'webp' }, { data: await png(80, 60), name: 'moved.png' });
    const done = await waitForEnd(tenant, made.body.id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const balance = (await call<AccountView>(tenant, '/account')).body.credits.remaining;
    assert.ok(balance < 50, 'the conversion was charged');
    // A second key of the tenant, one that may only read: it must move with its scopes.
    const reader = ((await callAdminSocket(first.dataDir, 'keys.create', { account: tenant.accountId, scopes: 'read' })) as { key: string }).key;
    const keys = [first.apiKey, tenant.apiKey, reader];

    const out = join(work, 'export');
    const refused = await convdAdmin(first.dataDir, ['store', 'export', out, '--with-files', '--json']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /a daemon holds .*: stop it first/);
    await first.stop();
    // A box with a history: 999 older ended conversions of the tenant and the webhook deliveries
    // of 40 of them, written into its store while no daemon runs (the export pages through them).
    const box = await LowdbStore.open({ dir: join(first.dataDir, 'store') });
    const older = Date.now() - 2 * HOUR;
    const ids = [done.id];
    for (let i = 0; i < HISTORY; i++) {
      const at = new Date(older + i).toISOString();
      const record = conversion(tenant.accountId, { status: 'failed', reserved_credits: 0, created_at: at, finished_at: at });
      await box.insertConversion(record);
      ids.push(record.id);
    }
    assert.equal(new Set(ids).size, CONVERSIONS);
    for (let i = 0; i < 40; i++) {
      await box.putDelivery({
        id: `dlv_${String(i).padStart(4, '0')}`, conversion_id: ids[i + 1]!, account_id: tenant.accountId, event: 'conversion.failed',
        url: 'https://hooks.example.com/convd', body: '{}', status: i % 2 ? 'delivered' : 'failed', attempts: [], next_attempt_at: null,
        created_at: new Date(older + i).toISOString(),
      });
    }
    await box.close();
    const exported = await convdAdmin(first.dataDir, ['store', 'export', out, '--with-files', '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(exported.json, { accounts: 2, keys: 3, conversions: CONVERSIONS, deliveries: 40, files: 1 });

    const newDir = join(work, 'node1');
    const imports = [];
    for (let i = 0; i < 2; i++) {
      const imported = await convdAdmin(newDir, ['store', 'import', out, '--database-url', database.url, '--json']);
      assert.equal(imported.code, 0, imported.stderr);
      imports.push(imported.json);
    }
    assert.deepEqual(imports[0], { accounts: 2, keys: 3, conversions: CONVERSIONS, deliveries: 40, files: 1 });
    assert.deepEqual(imports[1], imports[0], 'a second import reads the same');
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const counts = await db.query<{ n: string }>('SELECT (SELECT count(*) FROM convd_accounts) + (SELECT count(*) FROM convd_api_keys) + (SELECT count(*) FROM convd_conversions) + (SELECT count(*) FROM convd_deliveries) AS n');
      assert.equal(Number(counts.rows[0]!.n), 2 + 3 + CONVERSIONS + 40, 'nothing doubled by the second import');
    } finally {
      await db.end();
    }

    // The same export into another database with its files in a bucket.
    shared = { database: await freshDatabase(), bucket: await startS3() };
    await shared.bucket.keepDirs('moved');
    const blobUrl = shared.bucket.blobUrl('moved');
    const intoBucket = await convdAdmin(null, ['store', 'import', out, '--database-url', shared.database.url, '--blob-url', blobUrl, '--json'], S3_ENV);
    assert.equal(intoBucket.code, 0, intoBucket.stderr);
    assert.deepEqual(intoBucket.json, imports[0]);
    assert.deepEqual((await shared.bucket.keys('moved/')).filter((key) => !key.endsWith('/.keep')), [`moved/results/${done.id}`]);

    // A daemon on the first database and its data dir; two nodes on the second and its bucket.
    const known = { apiKey: first.apiKey, accountId: first.accountId };
    const nodeArgs = ['--database-url', shared.database.url, '--blob-url', blobUrl, '--workers', '1'];
    const [second, nodeA, nodeB] = await Promise.all([
      startDaemon({ ...known, args: ['--database-url', database.url], dataDir: newDir }),
      startDaemon({ ...known, args: nodeArgs, env: S3_ENV }),
      startDaemon({ ...known, args: nodeArgs, env: S3_ENV }),
    ].map((starting) => starting.then((daemon) => {
      moved.push(daemon);
      return daemon;
    })));

    for (const daemon of moved) {
      const on = (apiKey: string): Client => ({ baseUrl: daemon.baseUrl, apiKey });
      for (const key of keys) assert.equal((await call(on(key), '/account')).status, 200, `${daemon.baseUrl}: every key`);
      assert.equal((await call(on(reader), '/conversions', { method: 'POST' })).status, 403, 'the read key still may only read');
      assert.equal((await call<AccountView>(on(tenant.apiKey), '/account')).body.credits.remaining, balance, 'the same balance');
      const download = await fetch(`${daemon.baseUrl}/conversions/${done.id}/download`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
      assert.equal(download.status, 200);
      const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 80, 60]);
    }
    // The whole history page by page on one daemon of each store, then a spot-check of it on the other node.
    const history = async (daemon: DaemonHandle): Promise<PublicConversion[]> => {
      const listed: PublicConversion[] = [];
      for (let cursor: string | null = null; ;) {
        const page: { status: number; body: Page } = await call(({ baseUrl: daemon.baseUrl, apiKey: tenant.apiKey }), `/conversions?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200);
        listed.push(...page.body.data);
        cursor = page.body.next_cursor;
        if (!cursor) break;
      }
      return listed;
    };
    for (const daemon of [second, nodeA]) {
      const listed = await history(daemon);
      assert.equal(listed.length, CONVERSIONS, 'the whole history, page by page');
      assert.deepEqual(listed.map((c) => c.id).sort(), [...ids].sort());
      assert.equal(listed.find((c) => c.id === done.id)?.status, 'succeeded');
      if (daemon !== nodeA) continue;
      for (const spot of [listed[0]!, listed[1]!, listed[499]!, listed[500]!, listed[CONVERSIONS - 1]!]) {
        const there = await call({ baseUrl: nodeB.baseUrl, apiKey: tenant.apiKey }, `/conversions/${spot.id}`);
        assert.equal(there.status, 200);
        // The same object, but for the links, which name the node asked.
        assert.deepEqual(JSON.parse(JSON.stringify(there.body).replaceAll(nodeB.baseUrl, nodeA.baseUrl)), spot);
      }
    }

    const busy = await convdAdmin(newDir, ['store', 'import', out, '--database-url', database.url, '--json']);
    assert.notEqual(busy.code, 0);
    assert.match(busy.stderr, /a convd daemon \(or another import\) runs on this database: stop it before the import/);
  });

  it('an import beside a running node of a cluster is refused in words, and goes through once the node stopped', async () => {
    const target = await freshDatabase();
    const bucket = await startS3('convd-import-busy');
    after(async () => {
      await target.drop();
      await bucket.close();
    });
    await bucket.keepDirs('busy');
    // A small export, made by hand: an account, an ended conversion, and a delivery of its end
    // twice (a second one of a conversion and event is left out).
    const small = join(work, 'small-export');
    await mkdir(small, { recursive: true });
    const owner = 'acc_moved_small';
    const ended = conversion(owner, { status: 'failed', reserved_credits: 0, finished_at: new Date().toISOString() });
    const hook = (id: string, createdAt: string) => ({
      id, conversion_id: ended.id, account_id: owner, event: 'conversion.failed', url: 'https://hooks.example.com/convd', body: '{}',
      status: 'delivered', attempts: [], next_attempt_at: null, created_at: createdAt,
    });
    const lines = [
      { type: 'header', format: 'convd-store-export', version: 1, exported_at: new Date().toISOString(), with_files: false },
      { type: 'account', doc: { id: owner, name: owner, plan: 'lite', created_at: ended.created_at, credits_base: 10, credits_base_at: ended.created_at, resets_at: ended.created_at, webhook_secret: 'whsec_x' } },
      { type: 'conversion', doc: ended },
      { type: 'delivery', doc: hook('dlv_small_0', ended.created_at) },
      { type: 'delivery', doc: hook('dlv_small_1', ended.finished_at!) },
    ];
    await writeFile(join(small, 'store.ndjson'), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    const importArgs = ['store', 'import', small, '--database-url', target.url, '--json'];

    const nodeArgs = ['--database-url', target.url, '--blob-url', bucket.blobUrl('busy'), '--workers', '1'];
    const node = await startDaemon({ args: nodeArgs, env: S3_ENV });
    const soleDir = await mkdtemp(join(tmpdir(), 'convd-transfer-sole-'));
    try {
      const refused = await convdAdmin(null, importArgs);
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /convd nodes of a cluster \(this database and a bucket\) run on this database: stop every node before the import/);
      assert.equal(await accountsNamed(target.url, owner), 0, 'nothing was written');
      // Nor may a daemon without the bucket start beside it (it would take the cluster's running
      // conversions for its own interrupted ones).
      await assert.rejects(
        startDaemon({ args: ['--database-url', target.url], dataDir: soleDir, apiKey: node.apiKey, accountId: node.accountId }),
        /another convd daemon uses this database: nodes of a cluster \(this database and a bucket\) run on it/,
      );
      assert.equal((await call(node, '/account')).status, 200, 'the node runs on');
    } finally {
      await node.dispose();
      await rm(soleDir, { recursive: true, force: true });
    }
    const imported = await convdAdmin(null, importArgs);
    assert.equal(imported.code, 0, imported.stderr);
    assert.deepEqual(imported.json, { accounts: 1, keys: 0, conversions: 1, deliveries: 1, files: 0 });
    assert.equal(await accountsNamed(target.url, owner), 1);
    const again = await convdAdmin(null, importArgs);
    assert.deepEqual(again.json, imported.json, 'a second import reads the same');
  });

  /** How many accounts of this id the database holds. */
  async function accountsNamed(url: string, id: string): Promise<number> {
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM convd_accounts WHERE id = $1', [id]);
      return Number(rows[0]?.n ?? 0);
    } finally {
      await db.end();
    }
  }

  it('a damaged or foreign export is refused in words; an export needs a new directory', async () => {
    // A database no daemon runs on, so that the import gets as far as the records.
    const spare = await freshDatabase();
    after(() => spare.drop());
    const damaged = join(work, 'damaged');
    await rm(damaged, { recursive: true, force: true });
    await convdAdmin(null, ['store', 'import', damaged, '--database-url', spare.url]).then((result) => {
      assert.equal(result.code, 2);
      assert.match(result.stderr, /holds no store\.ndjson/);
    });
    await mkdir(damaged, { recursive: true });
    await writeFile(join(damaged, 'store.ndjson'), '{"type":"header","format":"something-else","version":1}\n');
    const foreign = await convdAdmin(null, ['store', 'import', damaged, '--database-url', spare.url]);
    assert.match(foreign.stderr, /not a convd store export/);
    const header = JSON.stringify({ type: 'header', format: 'convd-store-export', version: 1, exported_at: new Date().toISOString(), with_files: false });
    await writeFile(join(damaged, 'store.ndjson'), `${header}\n{"type":"conversion","doc":{"id":"../../etc/x"}}\n`);
    const hostile = await convdAdmin(null, ['store', 'import', damaged, '--database-url', spare.url]);
    assert.match(hostile.stderr, /invalid id/);
    const notEmpty = await convdAdmin(first.dataDir, ['store', 'export', damaged]);
    assert.equal(notEmpty.code, 2);
    assert.match(notEmpty.stderr, /not empty/);
  });
});
