/**
 * Whether an image conversion is heavy (it then runs in an engine host): by its size and the
 * pixels its header gives. The submission reads those pixels from the upload's first bytes and
 * keeps them on the record (`input_pixels`), so the run decides without opening the file again;
 * a job whose input is another file (a chain's next step) is still measured from its file.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { isHeavyImage } from '../../src/engines/image/heavy-image.ts';
import { withInputFile } from '../../src/engines/input-file.ts';
import { defaultEngines } from '../../src/engines/catalog.ts';
import { EngineHost } from '../../src/engines/host/engine-host.ts';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import type { FormatRegistry } from '../../src/formats/registry.ts';
import { headerPixels } from '../../src/inputs/image-header.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { convertOnEngines, type EngineCall } from '../../src/service/run/engine-call.ts';
import type { EngineGates } from '../../src/service/run/engine-gates.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { waitUntil } from '../helpers/ops-support.ts';

const MiB = 1024 * 1024;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-heavy-image-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const blank = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#3366cc' } });

describe('image headers', () => {
  it('give the pixels of a PNG, a GIF and a JPEG (after its EXIF), nothing for other bytes', async () => {
    assert.equal(headerPixels(await blank(300, 200).png().toBuffer()), 60_000);
    assert.equal(headerPixels(await blank(120, 90).gif().toBuffer()), 10_800);
    const jpeg = await blank(640, 480).jpeg().withMetadata({ exif: { IFD0: { ImageDescription: 'x'.repeat(20_000) } } }).toBuffer();
    assert.ok(jpeg.indexOf(Buffer.from('Exif')) > 0 && jpeg.length > 20_000, 'a JPEG whose frame header follows its EXIF');
    assert.equal(headerPixels(jpeg), 307_200);
    assert.equal(headerPixels(await blank(50, 50).webp().toBuffer()), null);
    assert.equal(headerPixels(Buffer.from('%PDF-1.7\n')), null);
  });
});

describe('the heavy-image check', () => {
  it('decides from what the submission read of the same file, without opening it', async () => {
    const inputPath = join(dir, 'never-written.png');
    const job = (size: number, pixels: number | null, target = 'webp') => ({ inputPath, target, inputFacts: { path: inputPath, size, pixels } });
    assert.equal(await isHeavyImage(job(40_000, 60_000)), false);
    assert.equal(await isHeavyImage(job(40_000, null)), false);
    assert.equal(await isHeavyImage(job(MiB, 60_000)), true, 'a file of 1 MiB or more');
    assert.equal(await isHeavyImage(job(30_000, 25_000_000)), true, 'a small file of many pixels');
    assert.equal(await isHeavyImage(job(1000, 100, 'avif')), true, 'a slow encoder');
    // Without facts the file is opened: it is not there.
    await assert.rejects(isHeavyImage({ inputPath, target: 'webp' }), { code: 'ENOENT' });
  });

  it('reads the file when the facts are of another one (a chain\'s next step)', async () => {
    const big = join(dir, 'big.png');
    await writeFile(big, await blank(3000, 2000).png({ compressionLevel: 9 }).toBuffer());
    assert.ok((await readFile(big)).length < MiB, 'a small file of 6,000,000 pixels');
    const facts = { path: join(dir, 'the-upload.png'), size: 900, pixels: 100 };
    assert.equal(await isHeavyImage({ inputPath: big, target: 'webp', inputFacts: facts }), true);
    assert.equal(await isHeavyImage({ inputPath: big, target: 'webp' }), true);
  });
});

describe('an input given as bytes (kept in its record)', () => {
  it('is judged from the bytes, with no file to open', async () => {
    const small = await blank(300, 200).png().toBuffer();
    const huge = await blank(2500, 2000).png({ compressionLevel: 9 }).toBuffer();
    assert.equal(await isHeavyImage({ inputPath: join(dir, 'not-there.png'), target: 'webp', inputBytes: small }), false);
    assert.equal(await isHeavyImage({ inputPath: join(dir, 'not-there.png'), target: 'webp', inputBytes: huge }), true, `${huge.length} bytes of 5 MP`);
  });

  it('is written as a file for work that reads one (an engine host), and removed after, however it ends', async () => {
    const bytes = Buffer.from('pixels');
    const inputPath = join(dir, 'given.png');
    const job = { inputPath, inputBytes: bytes } as EngineJob;
    const seen = await withInputFile(job, async (onDisk) => ({ bytes: onDisk.inputBytes, file: await readFile(onDisk.inputPath, 'utf8') }));
    assert.deepEqual(seen, { bytes: undefined, file: 'pixels' });
    assert.equal(existsSync(inputPath), false);
    await assert.rejects(withInputFile(job, async () => {
      assert.equal(existsSync(inputPath), true);
      throw new Error('the host failed');
    }), /the host failed/);
    assert.equal(existsSync(inputPath), false);
    // A job with its file is handed on as it is.
    const withFile = { inputPath: '/somewhere/else.png' } as EngineJob;
    assert.equal(await withInputFile(withFile, async (onDisk) => onDisk), withFile);
  });
});

describe('a heavy image given as bytes, with an engine host', () => {
  it('is converted in the host from a file written for it, which is gone after', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 1024 });
    try {
      const image = defaultEngines({ maxInputPixels: 100_000_000 }, new Map(), host).find((engine) => engine.name === 'image')!;
      await image.probe();
      const bytes = await blank(2500, 1800).png().toBuffer();
      const inputPath = join(dir, 'bytes-input.png');
      const outputPath = join(dir, 'bytes-output.webp');
      await image.convert({
        inputPath, inputBytes: bytes, inputFacts: { path: inputPath, size: bytes.length, pixels: 4_500_000 }, outputPath, source: 'png', target: 'webp', variant: null, options: {},
        signal: new AbortController().signal, onProgress: () => undefined,
      });
      assert.equal((await host.status()).started, 1, 'converted in a host process');
      const meta = await sharp(outputPath).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 2500, 1800]);
      assert.equal(existsSync(inputPath), false, 'the file written for the host is gone');
    } finally {
      await host.close();
    }
  });
});

describe('the run', () => {
  async function jobOf(record: Partial<ConversionRecord>, extra: Partial<EngineCall> = {}): Promise<EngineJob> {
    let seen: EngineJob | undefined;
    const engine = { name: 'image', convert: async (job: EngineJob) => void (seen = job) } as unknown as Engine;
    const call = {
      record: { source: 'png', target: 'webp', variant: null, options: {}, account_id: 'acc_x', input: { kind: 'file', sha256: '' }, input_size: 5000, ...record } as ConversionRecord,
      inputPath: '/run/photo.png', outputPath: '/run/photo.webp', signal: new AbortController().signal, lane: 'normal',
      maxOutput: { bytes: MiB }, timeLimitOf: () => 60_000, onProgress: () => undefined, onEngineTime: () => undefined, ...extra,
    } as unknown as EngineCall;
    await convertOnEngines(call, { engine: 'image' } as ConversionPair, engine, {} as FormatRegistry, { of: () => undefined } as unknown as EngineGates);
    return seen!;
  }

  it('gives the engine what the submission read of a single upload, for the run\'s input path', async () => {
    assert.deepEqual((await jobOf({ input_pixels: 60_000 })).inputFacts, { path: '/run/photo.png', size: 5000, pixels: 60_000 });
    assert.deepEqual((await jobOf({ input_pixels: null })).inputFacts, { path: '/run/photo.png', size: 5000, pixels: null });
  });

  it('gives nothing for a record without them, a URL, a merge or a bundle', async () => {
    assert.equal((await jobOf({})).inputFacts, undefined);
    assert.equal((await jobOf({ input_pixels: 10, input: { kind: 'url', url: 'https://example.com/a.png' } })).inputFacts, undefined);
    assert.equal((await jobOf({ input_pixels: 10, inputs: [{ name: 'a.png', size: 1, format: 'png' }] })).inputFacts, undefined);
    assert.equal((await jobOf({ input_pixels: 10 }, { bundledInputs: ['1.pdf'] })).inputFacts, undefined);
  });
});

describe('a submission', () => {
  let system: ConversionSystem;
  let account: AccountRecord;
  before(async () => {
    system = await openSystem({
      dataDir: join(dir, 'data'),
      config: defaultServiceConfig({}),
      workers: 1,
      engines: [createImageEngine({ maxInputPixels: 100_000_000 })],
      ephemeralStore: true,
    });
    await system.start();
    account = await system.accounts.createAccount({ plan: 'unmetered', name: 'heavy' });
  });
  after(async () => {
    await system.stop();
  });

  async function submit(png: Buffer, withHead: boolean): Promise<string> {
    const path = system.blobs.spoolPath();
    await writeFile(path, png);
    const file = { path, size: png.length, sha256: '', filename: 'photo.png', ...(withHead ? { head: png.subarray(0, 64 * 1024) } : {}) };
    return (await system.conversions.create(account, { fields: { target: 'webp' }, options: {}, files: [file] })).record.id;
  }

  it('keeps the pixels of an upload\'s header on the record, not in its public view, and converts it', async () => {
    const png = await blank(300, 200).png().toBuffer();
    const id = await submit(png, true);
    const record = await system.store.getConversion(id);
    assert.equal(record?.input_pixels, 60_000);
    assert.equal('input_pixels' in system.conversions.publicView(record!), false);
    const done = await waitUntil('the conversion ends', async () => {
      const now = await system.store.getConversion(id);
      return now && now.status !== 'queued' && now.status !== 'processing' ? now : undefined;
    });
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const meta = await sharp(await readFile(system.blobs.localPath('results', id)!)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 300, 200]);
  });

  it('leaves them out where the upload\'s first bytes were not kept', async () => {
    const id = await submit(await blank(64, 64).png().toBuffer(), false);
    assert.equal((await system.store.getConversion(id))?.input_pixels, undefined);
  });
});
