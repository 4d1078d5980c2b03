/**
 * The in-process client's handling of file inputs: a regular file is hard-linked into the
 * service's spool (the same file, a second name), read from there, and that name is gone once the
 * conversion ends; the user's file is never written.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createLocalClient } from '../../src/client/local-client.ts';
import type { ConvClient } from '../../src/client/types.ts';
import { waitUntil } from '../helpers/ops-support.ts';

let dir: string;
let client: ConvClient;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'conv-local-client-test-'));
  client = await createLocalClient({ env: { ...process.env, XDG_CACHE_HOME: join(dir, 'cache') }, workers: 1 });
});
after(async () => {
  await client.close();
  await rm(dir, { recursive: true, force: true });
});

describe('LocalClient file inputs', () => {
  it('links a regular file instead of copying it, and lets go of it when the conversion ends', async () => {
    // Noise encodes slowly (most of a second): the conversion is still running when we look.
    const input = join(dir, 'noise.png');
    await writeFile(input, await sharp({ create: { width: 2000, height: 2000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .png({ compressionLevel: 1 }).toBuffer());
    const bytes = await readFile(input);
    const created = await client.createConversion({ input: { kind: 'file', path: input }, target: 'webp', wait: 0 });
    assert.notEqual(created.status, 'succeeded', 'the conversion ended before it could be looked at');
    assert.equal((await stat(input)).nlink, 2, 'the service holds the same file under a second name');
    const ended = await client.getConversion(created.id, { wait: 30 });
    assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
    // The service lets go of its input once the end state is stored, just after answering.
    await waitUntil('the service to let go of its link', async () => ((await stat(input)).nlink === 1 ? true : undefined), 5000);
    assert.deepEqual(await readFile(input), bytes);
    const download = await client.download(created.id);
    assert.equal((await sharp(download.localPath!).metadata()).format, 'webp');
  });
});
