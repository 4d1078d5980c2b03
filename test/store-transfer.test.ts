/**
 * Moving a box: a daemon on the embedded store converts and charges; `convd store export
 * --with-files` is refused while it runs and writes its store and files once it is stopped;
 * `convd store import` reads them into PostgreSQL and a new data dir, twice with the same
 * outcome; a daemon on the database then knows the same keys, balance, conversions and serves the
 * result; an import while that daemon runs is refused; a damaged export is refused in words.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import sharp from 'sharp';
import { call, newAccount, png, submitFile, waitForEnd } from './api-support.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from './helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from './helpers/postgres.ts';
import { S3_ENV, startS3 } from './helpers/s3.ts';
import { conversion, HOUR } from './helpers/store-records.ts';
import { LowdbStore } from '../src/store/lowdb-store.ts';

/** Older conversions in the box's store: more than one page of the export (500). */
const HISTORY = 700;

interface AccountView {
  credits: { remaining: number };
}

describe('convd store export and import', () => {
  let database: TestDatabase;
  let work: string;
  let first: DaemonHandle;
  let second: DaemonHandle | undefined;
  before(async () => {
    database = await freshDatabase();
    work = await mkdtemp(join(tmpdir(), 'convd-transfer-'));
    first = await startDaemon({ args: ['--workers', '2'] });
  });
  after(async () => {
    await second?.dispose();
    await first?.dispose();
    await rm(work, { recursive: true, force: true });
    await database?.drop();
  });

  it('moves keys, balance, history and results from the first box into PostgreSQL, idempotently', async () => {
    const tenant = await newAccount(first, 'lite', { credits: 50 });
    const made = await submitFile(tenant, { target: 'webp' }, { data: await png(80, 60), name: 'moved.png' });
    const done = await waitForEnd(tenant, made.body.id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const balance = (await call<AccountView>(tenant, '/account')).body.credits.remaining;
    assert.ok(balance < 50, 'the conversion was charged');

    const out = join(work, 'export');
    const refused = await convdAdmin(first.dataDir, ['store', 'export', out, '--with-files', '--json']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /a daemon holds .*: stop it first/);
    await first.stop();
    // A box with a history: 700 older ended conversions of the tenant and 40 webhook deliveries,
    // written into its store while no daemon runs (the export pages through them).
    const box = await LowdbStore.open({ dir: join(first.dataDir, 'store') });
    const older = Date.now() - 2 * HOUR;
    for (let i = 0; i < HISTORY; i++) {
      const at = new Date(older + i).toISOString();
      await box.insertConversion(conversion(tenant.accountId, { status: 'failed', reserved_credits: 0, created_at: at, finished_at: at }));
    }
    for (let i = 0; i < 40; i++) {
      await box.putDelivery({
        id: `dlv_${String(i).padStart(4, '0')}`, conversion_id: done.id, account_id: tenant.accountId, event: 'conversion.succeeded',
        url: 'https://hooks.example.com/convd', body: '{}', status: i % 2 ? 'delivered' : 'failed', attempts: [], next_attempt_at: null,
        created_at: new Date(older + i).toISOString(),
      });
    }
    await box.close();
    const exported = await convdAdmin(first.dataDir, ['store', 'export', out, '--with-files', '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(exported.json, { accounts: 2, keys: 2, conversions: HISTORY + 1, deliveries: 40, files: 1 });

    const newDir = join(work, 'node1');
    const imports = [];
    for (let i = 0; i < 2; i++) {
      const imported = await convdAdmin(newDir, ['store', 'import', out, '--database-url', database.url, '--json']);
      assert.equal(imported.code, 0, imported.stderr);
      imports.push(imported.json);
    }
    assert.deepEqual(imports[0], { accounts: 2, keys: 2, conversions: HISTORY + 1, deliveries: 40, files: 1 });
    assert.deepEqual(imports[1], imports[0], 'a second import reads the same');
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const counts = await db.query<{ n: string }>('SELECT (SELECT count(*) FROM convd_accounts) + (SELECT count(*) FROM convd_api_keys) + (SELECT count(*) FROM convd_conversions) AS n');
      assert.equal(Number(counts.rows[0]!.n), 4 + HISTORY + 1, 'nothing doubled by the second import');
    } finally {
      await db.end();
    }

    // The same export into another database with its files in a bucket.
    const bucket = await startS3();
    const other = await freshDatabase();
    try {
      const intoBucket = await convdAdmin(null, ['store', 'import', out, '--database-url', other.url, '--blob-url', bucket.blobUrl('moved'), '--json'], S3_ENV);
      assert.equal(intoBucket.code, 0, intoBucket.stderr);
      assert.deepEqual(intoBucket.json, imports[0]);
      assert.deepEqual(await bucket.keys('moved/'), [`moved/results/${done.id}`]);
    } finally {
      await other.drop();
      await bucket.close();
    }

    second = await startDaemon({ args: ['--database-url', database.url], dataDir: newDir, apiKey: first.apiKey, accountId: first.accountId });
    const moved = { baseUrl: second.baseUrl, apiKey: tenant.apiKey };
    assert.equal((await call<AccountView>(moved, '/account')).body.credits.remaining, balance, 'the same key, the same balance');
    let listed = 0;
    for (let cursor: string | null = null; ;) {
      const page: { status: number; body: { data: unknown[]; next_cursor: string | null } } = await call(moved, `/conversions?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      listed += page.body.data.length;
      cursor = page.body.next_cursor;
      if (!cursor) break;
    }
    assert.equal(listed, HISTORY + 1, 'the whole history, page by page');
    const again = await call(moved, `/conversions/${done.id}`);
    assert.equal(again.body.status, 'succeeded');
    const download = await fetch(`${second.baseUrl}/conversions/${done.id}/download`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    assert.equal(download.status, 200);
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 80, 60]);
    assert.equal((await call(second, '/account')).status, 200, 'the owner\'s key too');

    const busy = await convdAdmin(newDir, ['store', 'import', out, '--database-url', database.url, '--json']);
    assert.notEqual(busy.code, 0);
    assert.match(busy.stderr, /another convd daemon uses this database/);
  });

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
