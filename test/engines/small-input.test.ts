/**
 * A small stored image is read whole and handed to sharp as bytes (smallInputBytes), where the
 * submission told its size; anything else is left to sharp's own reading of the path.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { smallInputBytes } from '../../src/engines/image/small-input.ts';
import type { EngineJob } from '../../src/engines/types.ts';

describe('a small stored image read whole', () => {
  let dir: string;
  let png: Buffer;
  let path: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-small-input-'));
    png = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#4080c0' } }).png().toBuffer();
    path = join(dir, 'cnv_stored');
    await writeFile(path, png);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const job = (over: Partial<EngineJob>): EngineJob => ({
    inputPath: path, outputPath: join(dir, 'out.webp'), source: 'png', target: 'webp', variant: null, options: {},
    signal: new AbortController().signal, onProgress: () => undefined, inputFacts: { path, size: png.length, pixels: 20_000 }, ...over,
  });

  it('reads the file as the submission measured it, and sharp decodes the bytes', async () => {
    const bytes = await smallInputBytes(job({}));
    assert.ok(bytes?.equals(png));
    assert.deepEqual(await sharp(bytes).metadata().then((meta) => [meta.format, meta.width]), ['png', 200]);
  });

  it('leaves the path where the size was not told, is of another file, is large, or the source is not read as bytes', async () => {
    assert.equal(await smallInputBytes(job({ inputFacts: undefined })), undefined);
    assert.equal(await smallInputBytes(job({ inputFacts: { path: join(dir, 'other'), size: png.length, pixels: 1 } })), undefined, "a chain's next step");
    assert.equal(await smallInputBytes(job({ inputFacts: { path, size: 2 * 1024 * 1024, pixels: 1 } })), undefined);
    assert.equal(await smallInputBytes(job({ source: 'svg' })), undefined);
  });

  it('leaves a file that cannot be read to sharp, which says what is wrong', async () => {
    const gone = join(dir, 'cnv_gone');
    assert.equal(await smallInputBytes(job({ inputPath: gone, inputFacts: { path: gone, size: 10, pixels: 1 } })), undefined);
  });
});
