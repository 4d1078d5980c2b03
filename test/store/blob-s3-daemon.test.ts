/**
 * A real daemon with `--blob-url` on an S3-protocol server (s3rver): a PNG becomes a WebP whose
 * result is an object in the bucket (decoded whole, and a byte range answered 206 with exactly
 * those bytes), the input object goes once the conversion ends, the data dir holds no inputs or
 * results, DELETE removes the object (then 410); a blob URL that is not one stops the start with
 * exit 2, a bucket that does not answer stops it with a message.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { call, png, submitFile, waitForEnd } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';
import { waitUntil } from '../helpers/ops-support.ts';

describe('convd with its files in an S3 bucket', () => {
  let bucket: TestBucket;
  let daemon: DaemonHandle;
  before(async () => {
    bucket = await startS3();
    daemon = await startDaemon({ args: ['--blob-url', bucket.blobUrl('box'), '--workers', '2'], env: S3_ENV });
  });
  after(async () => {
    await daemon?.dispose();
    await bucket?.close();
  });

  it('converts into the bucket, serves the result whole and by range, removes it on DELETE', async () => {
    const made = await submitFile(daemon, { target: 'webp' }, { data: await png(120, 90), name: 'bucket.png' });
    assert.equal(made.status, 202, JSON.stringify(made.body));
    const done = await waitForEnd(daemon, made.body.id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    // The input goes once the end is stored, beside the answer: a moment after it.
    await waitUntil('the input object gone', async () => ((await bucket.keys('box/inputs/')).length === 0 ? true : undefined), 5000);
    assert.deepEqual(await bucket.keys('box/'), [`box/results/${done.id}`], 'the result is an object; the input went with the end');
    assert.equal(existsSync(join(daemon.dataDir, 'blobs', 'results')), false, 'no result on the node');

    const url = `${daemon.baseUrl}/conversions/${done.id}/download`;
    const auth = { authorization: `Bearer ${daemon.apiKey}` };
    const whole = Buffer.from(await (await fetch(url, { headers: auth })).arrayBuffer());
    const meta = await sharp(whole).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 120, 90]);
    assert.equal(whole.length, done.result?.size);
    const part = await fetch(url, { headers: { ...auth, range: 'bytes=10-29' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 10-29/${whole.length}`);
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(whole.subarray(10, 30)));

    assert.equal((await call(daemon, `/conversions/${done.id}`, { method: 'DELETE' })).status, 200);
    assert.deepEqual(await bucket.keys('box/'), []);
    assert.equal((await fetch(url, { headers: auth })).status, 410);
    const ready = (await (await fetch(`${daemon.url}/readyz`)).json()) as { status: string; checks: { files?: { ok: boolean; detail: string } } };
    assert.equal(ready.status, 'ready');
    assert.deepEqual(ready.checks.files, { ok: true, detail: 'bucket answers' });
  });

  it('a blob URL that is not one stops the start (exit 2); a bucket that does not answer stops it in words', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'convd-s3-bad-'));
    try {
      await assert.rejects(startDaemon({ args: ['--blob-url', 'http://bucket/x'], dataDir, env: S3_ENV }), /blob_url|blob-url[\s\S]*s3:\/\//);
      await assert.rejects(
        startDaemon({ args: ['--blob-url', 's3://no-such-bucket/x?endpoint=http%3A%2F%2F127.0.0.1%3A1&region=us-east-1'], dataDir, env: S3_ENV }),
        /exited with 1[\s\S]*convd: cannot use the bucket no-such-bucket at http:\/\/127\.0\.0\.1:1: /,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
