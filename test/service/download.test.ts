/**
 * A download as the service hands it out (ConversionService.download): a GET's size is the one
 * the success recorded, without asking the disk (or a bucket, a HEAD request) for it first; a
 * file gone since is found by reading it, 410 all the same. A HEAD opens nothing, so it asks.
 */
import assert from 'node:assert/strict';
import { unlink, writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { resultResponse } from '../../daemon/http/result-download.ts';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import { ApiError } from '../../src/errors/api-error.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { openTempSystem, type TempSystem } from '../helpers/temp-system.ts';

describe('a download', () => {
  let opened: TempSystem;
  let system: ConversionSystem;
  let account: AccountRecord;
  const sizeAsked: string[] = [];
  before(async () => {
    opened = await openTempSystem('convd-download-', { engines: [createImageEngine({ maxInputPixels: 100_000_000 })], ephemeralStore: true });
    system = opened.system;
    await system.start();
    account = await system.accounts.createAccount({ plan: 'unmetered', name: 'download' });
    const size = system.blobs.size.bind(system.blobs);
    system.blobs.size = async (kind, id) => {
      sizeAsked.push(`${kind}/${id}`);
      return size(kind, id);
    };
  });
  after(() => opened.close());

  async function converted(): Promise<string> {
    const png = await sharp({ create: { width: 50, height: 40, channels: 3, background: '#804020' } }).png().toBuffer();
    const path = system.blobs.spoolPath();
    await writeFile(path, png);
    const id = (await system.conversions.create(account, { fields: { target: 'webp' }, options: {}, files: [{ path, size: png.length, sha256: '', filename: 'a.png' }] })).record.id;
    const done = await waitUntil('the conversion ends', async () => {
      const now = await system.store.getConversion(id);
      return now?.status === 'succeeded' || now?.status === 'failed' ? now : undefined;
    });
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    return id;
  }

  it('of a GET takes the recorded size and reads the file once; a HEAD asks for the size', async () => {
    const id = await converted();
    sizeAsked.length = 0;
    const got = await system.conversions.download(account, id);
    assert.deepEqual(sizeAsked, [], 'no stat before the read');
    const response = await resultResponse(got, null, false);
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(bytes.length, got.size);
    assert.equal(got.size, got.record.result!.size);
    assert.equal((await sharp(bytes).metadata()).format, 'webp');

    const head = await system.conversions.download(account, id, { checkFile: true });
    assert.deepEqual(sizeAsked, [`results/${id}`]);
    assert.equal(head.size, got.size);
  });

  it('of a file gone since its success is 410 expired, for a GET and a HEAD alike', async () => {
    const id = await converted();
    await unlink(system.blobs.localPath('results', id)!);
    const read = await system.conversions.download(account, id).then((got) => resultResponse(got, null, false)).catch((error: unknown) => error);
    assert.ok(read instanceof ApiError, String(read));
    assert.equal(read.code, 'expired');
    const head = await system.conversions.download(account, id, { checkFile: true }).catch((error: unknown) => error);
    assert.ok(head instanceof ApiError, String(head));
    assert.equal(head.code, 'expired');
  });
});
