/**
 * The two roles a node of a cluster can be given: an API-only node (`--workers 0`)
 * and a worker-only node (`--no-api`), on one PostgreSQL database and one bucket, make a whole
 * service between them: what the first accepts, the second converts. A worker-only node answers
 * /v1 with 503 `api_disabled` (Retry-After, a message saying why, in German too) while health,
 * readiness and metrics stay served; a role that cannot work (no shared store, neither API nor
 * workers) stops the start with exit 2, naming the settings.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { png, submitFile } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { runConvd } from '../helpers/ops-support.ts';

describe('an API-only node and a worker-only node', () => {
  let database: TestDatabase;
  let bucket: TestBucket;
  let apiNode: DaemonHandle;
  let workerNode: DaemonHandle;
  before(async () => {
    database = await freshDatabase();
    bucket = await startS3();
    await bucket.keepDirs('roles');
    const shared = ['--database-url', database.url, '--blob-url', bucket.blobUrl('roles')];
    apiNode = await startDaemon({ args: [...shared, '--workers', '0'], env: S3_ENV });
    workerNode = await startDaemon({ apiKey: apiNode.apiKey, accountId: apiNode.accountId, env: S3_ENV, args: [...shared, '--no-api', '--workers', '1'] });
  });
  after(async () => {
    await workerNode?.dispose();
    await apiNode?.dispose();
    await bucket?.close();
    await database?.drop();
  });

  it('what the API-only node accepts, the worker-only node converts', async () => {
    const client = { baseUrl: apiNode.baseUrl, apiKey: apiNode.apiKey };
    const made = await submitFile(client, { target: 'webp', wait: '30' }, { data: await png(80, 50), name: 'split.png' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal(made.body.status, 'succeeded');
    const download = await fetch(`${apiNode.baseUrl}/conversions/${made.body.id}/download`, { headers: { authorization: `Bearer ${apiNode.apiKey}` } });
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 80, 50]);
    assert.match(workerNode.stderr(), new RegExp(`${made.body.id}.*"to":"succeeded"|"to":"succeeded".*${made.body.id}`), 'the worker-only node ran it');
  });

  it('a worker-only node answers /v1 with 503 api_disabled and Retry-After, in the caller\'s language', async () => {
    for (const path of ['/v1/conversions', '/v1/formats', '/v1/account', '/v1/nothing/here']) {
      const response = await fetch(`${workerNode.url}${path}`, { headers: { authorization: `Bearer ${apiNode.apiKey}` } });
      const body = await response.json() as { error: { code: string; message: string } };
      assert.equal(response.status, 503, path);
      assert.equal(body.error.code, 'api_disabled', path);
      assert.equal(response.headers.get('retry-after'), '1');
      assert.match(body.error.message, /only runs conversions.*another node/);
    }
    const posted = await fetch(`${workerNode.baseUrl}/conversions`, { method: 'POST', headers: { authorization: `Bearer ${apiNode.apiKey}`, 'accept-language': 'de' }, body: 'x' });
    assert.equal(posted.status, 503);
    assert.match((await posted.json() as { error: { message: string } }).error.message, /anderen Knoten/);
  });

  it('health, readiness and metrics stay served on the worker-only node; web pages are not', async () => {
    assert.equal((await fetch(`${workerNode.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${workerNode.url}/signin`)).status, 404);
    assert.equal((await fetch(`${apiNode.url}/signin`)).status, 200, 'the API node serves them');
    const ready = await fetch(`${workerNode.url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    const metrics = await (await fetch(`${workerNode.url}/metrics`)).text();
    assert.match(metrics, /^convd_leases_held \d+$/m);
  });
});

describe('roles that cannot work stop the start', () => {
  it('a node without workers or without the API needs a shared database and bucket; one with neither is refused', async () => {
    const alone = await runConvd(['serve', '--port', '0', '--no-api']);
    assert.equal(alone.code, 2, alone.stderr);
    assert.match(alone.stderr, /--no-api: a node without the API is a worker of a cluster: it needs database_url and blob_url/);
    const apiOnly = await runConvd(['serve', '--port', '0', '--workers', '0']);
    assert.equal(apiOnly.code, 2, apiOnly.stderr);
    assert.match(apiOnly.stderr, /--workers: 0 workers is an API-only node of a cluster: it needs database_url and blob_url/);
    const nothing = await runConvd(['serve', '--port', '0', '--no-api', '--workers', '0', '--database-url', 'postgres://127.0.0.1:1/none', '--blob-url', 's3://none/x?endpoint=http://127.0.0.1:1&region=us-east-1']);
    assert.equal(nothing.code, 2, nothing.stderr);
    assert.match(nothing.stderr, /--no-api with --workers 0: a node with neither the API nor workers would do nothing/);
  });
});
