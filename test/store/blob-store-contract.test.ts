/**
 * One contract, two places for files: the LocalBlobStore (the data dir) and the S3BlobStore (a
 * bucket on an S3-protocol server, s3rver). An input adopted from the spool, or from memory, is read
 * back through a scoped local copy; a result adopted from an engine's output streams back whole and
 * by byte range (12 MiB: several multipart parts) and reads back whole in one piece; sizes, listing, deletion (twice), and ids that could name a
 * path are refused. In a bucket the files are objects under the prefix and nothing stays on the
 * node's disk.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { LocalBlobStore, type BlobStore } from '../../src/store/blob-store.ts';
import { S3BlobStore } from '../../src/store/s3/s3-blob-store.ts';
import { parseBlobUrl } from '../../src/store/s3/blob-url.ts';
import { S3_ENV, startS3, type TestBucket } from '../helpers/s3.ts';

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

let bucket: TestBucket;
before(async () => {
  Object.assign(process.env, S3_ENV);
  bucket = await startS3();
});
after(async () => {
  await bucket?.close();
});

const places: { name: string; open(root: string): Promise<BlobStore> }[] = [
  { name: 'local disk', open: (root) => LocalBlobStore.open(root) },
  { name: 'S3 bucket', open: (root) => S3BlobStore.open(bucket.blobUrl('node-a'), root) },
];

for (const place of places) {
  describe(`BlobStore contract: ${place.name}`, () => {
    let root: string;
    let blobs: BlobStore;
    before(async () => {
      root = await mkdtemp(join(tmpdir(), 'convd-blobs-'));
      blobs = await place.open(root);
    });
    after(async () => {
      await rm(root, { recursive: true, force: true });
    });

    it('adopts a spooled input and lends it to an engine as a local file', async () => {
      const data = randomBytes(70_000);
      const spooled = blobs.spoolPath();
      await writeFile(spooled, data);
      await blobs.adoptInput('cnv_input1', spooled);
      assert.equal(existsSync(spooled), false, 'the spooled file is moved, not copied');
      assert.equal(await blobs.size('inputs', 'cnv_input1'), data.length);
      const local = await blobs.localInput('cnv_input1');
      assert.deepEqual(await readFile(local.path), data);
      await local.release();
      assert.equal(await blobs.exists('inputs', 'cnv_input1'), true, 'the stored input outlives the copy');
      assert.ok((await blobs.list('inputs')).includes('cnv_input1'));
    });

    it('stores an input held in memory (a small upload never spooled) without a spool file', async () => {
      const data = randomBytes(9_000);
      await blobs.adoptInputBytes('cnv_memory1', data);
      assert.equal(await blobs.size('inputs', 'cnv_memory1'), data.length);
      const local = await blobs.localInput('cnv_memory1');
      assert.deepEqual(await readFile(local.path), data);
      await local.release();
      assert.deepEqual(await readdir(join(root, 'spool')), [], 'nothing went through the spool');
      await assert.rejects(blobs.adoptInputBytes('../memory', data), /unsafe blob id/);
      await blobs.delete('inputs', 'cnv_memory1');
    });

    it('adopts an output as the result and streams it back whole and by range (12 MiB, several parts)', async () => {
      const data = randomBytes(12 * 1024 * 1024 + 123);
      const output = blobs.outputPathFor('cnv_result1', 'webp');
      await writeFile(output, data);
      await blobs.adoptResult('cnv_result1', output);
      assert.equal(existsSync(output), false);
      assert.equal(await blobs.size('results', 'cnv_result1'), data.length);
      assert.ok((await bytesOf(await blobs.openRead('results', 'cnv_result1'))).equals(data));
      assert.ok((await blobs.readAll('results', 'cnv_result1')).equals(data), 'read whole');
      assert.ok((await blobs.readAll('results', 'cnv_result1', data.length)).equals(data), 'read whole at the size told');
      const range = await bytesOf(await blobs.openRead('results', 'cnv_result1', { start: 9_000_000, end: 9_000_099 }));
      assert.ok(range.equals(data.subarray(9_000_000, 9_000_100)));
      // Across several of the reads a download makes (256 KiB each on disk).
      const wide = await bytesOf(await blobs.openRead('results', 'cnv_result1', { start: 200_001, end: 1_300_000 }));
      assert.ok(wide.equals(data.subarray(200_001, 1_300_001)));
      assert.deepEqual(await blobs.list('results'), ['cnv_result1']);
    });

    it('deletes (twice without complaint); a deleted file cannot be opened or sized', async () => {
      const output = blobs.outputPathFor('cnv_gone', 'png');
      await writeFile(output, 'x');
      await blobs.adoptResult('cnv_gone', output);
      await blobs.delete('results', 'cnv_gone');
      await blobs.delete('results', 'cnv_gone');
      assert.equal(await blobs.size('results', 'cnv_gone'), null);
      assert.equal(await blobs.exists('results', 'cnv_gone'), false);
      await assert.rejects(blobs.openRead('results', 'cnv_gone'));
      // ENOENT is what the download tells apart as the spec's 410 from a store that does not answer.
      await assert.rejects(blobs.readAll('results', 'cnv_gone'), { code: 'ENOENT' });
      await assert.rejects(blobs.readAll('results', 'cnv_gone', 100), { code: 'ENOENT' });
      await assert.rejects(blobs.localInput('cnv_never'));
    });

    it('refuses ids and extensions that could name a path', async () => {
      for (const id of ['../x', 'a/b', '', 'x y']) {
        await assert.rejects(blobs.size('results', id), /unsafe blob id/, id);
        assert.throws(() => blobs.outputPathFor(id, 'png'), /unsafe output name/, id);
      }
      assert.throws(() => blobs.outputPathFor('cnv_ok', '../png'), /unsafe output name/);
    });

    if (place.name === 'S3 bucket') {
      it('keeps files as objects under its prefix; nothing stays in scratch', async () => {
        const keys = await bucket.keys('node-a/');
        assert.deepEqual(keys, ['node-a/inputs/cnv_input1', 'node-a/results/cnv_result1']);
        assert.deepEqual(await readdir(join(root, 'work')), []);
        assert.deepEqual(await readdir(join(root, 'spool')), []);
        assert.equal(existsSync(join(root, 'results')), false, 'no results directory on the node');
      });
    }
  });
}

describe('blob URLs', () => {
  it('reads bucket, prefix, endpoint, region and path style; refuses what it cannot use', () => {
    assert.deepEqual(parseBlobUrl('s3://my-bucket/convd/prod/?endpoint=http%3A%2F%2F10.0.0.5%3A9000&region=eu-west-1'), {
      bucket: 'my-bucket', prefix: 'convd/prod/', endpoint: 'http://10.0.0.5:9000', region: 'eu-west-1', forcePathStyle: true,
    });
    assert.deepEqual(parseBlobUrl('s3://my-bucket'), { bucket: 'my-bucket', prefix: '', forcePathStyle: false });
    for (const [url, reason] of [
      ['http://bucket/x', /s3:\/\//], ['s3://key:secret@bucket/x', /credentials/], ['s3://B/x', /bucket/],
['s3://bucket/x?acl=public', /unknown parameter/], ['s3://bucket/x?endpoint=ftp://h', /http/],
    ] as const) {
      assert.throws(() => parseBlobUrl(url), reason, url);
    }
  });
});
