/**
 * What a run gives its engine. An engine that reads files whatever they are called (the image
 * engine's raster sources: Engine.readsAnyNameOf) gets the stored input itself and an output path of the store's
 * work area, and no run directory is made for it; any other gets a directory of its own with the
 * input under the user's name. Either way nothing of the run is left in the work area, and an
 * engine's message names neither path.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import { createPdfPagesEngine } from '../../src/engines/pdfpages/pdfpages-engine.ts';
import { scratchDirFor } from '../../src/engines/scratch.ts';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { INLINE_INPUT_BYTES } from '../../src/service/engine-input.ts';
import { RunDirs } from '../../src/service/job-dir.ts';
import { RunFiles } from '../../src/service/run/run-files.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { LocalBlobStore } from '../../src/store/blob-store.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { workFiles } from '../helpers/work-files.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-run-files-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface SeenJob {
  inputPath: string;
  outputPath: string;
  /** The input's size as the engine got it: from the file, or from the bytes given. */
  inputBytes: number;
  /** Whether the bytes came with the job (EngineJob.inputBytes), and whether a file was at inputPath. */
  given: boolean;
  fileThere: boolean;
}

/** The image engine, telling each job's paths (and how its input came) as it converts. */
function watchedImageEngine(readsAnyName: boolean, seen: SeenJob[]): Engine {
  const engine = createImageEngine({ maxInputPixels: 100_000_000 });
  return {
    ...engine,
    readsAnyNameOf: readsAnyName ? engine.readsAnyNameOf : undefined,
    convert: async (job: EngineJob) => {
      const file = await readFile(job.inputPath).catch(() => null);
      seen.push({ inputPath: job.inputPath, outputPath: job.outputPath, inputBytes: (job.inputBytes ?? file)?.length ?? -1, given: job.inputBytes !== undefined, fileThere: file !== null });
      return engine.convert(job);
    },
  };
}

describe('the files of a run', () => {
  for (const readsAnyName of [true, false]) {
    describe(readsAnyName ? 'of an engine that reads any name' : 'of an engine that needs the user\'s name', () => {
      let system: ConversionSystem;
      let account: AccountRecord;
      const seen: SeenJob[] = [];
      const work = () => join(dir, `data-${readsAnyName}`, 'blobs', 'work');
      const inputs = () => join(dir, `data-${readsAnyName}`, 'blobs', 'inputs');
      let lastCreated: ConversionRecord | undefined;
      before(async () => {
        system = await openSystem({
          dataDir: join(dir, `data-${readsAnyName}`),
          config: defaultServiceConfig({}),
          workers: 1,
          engines: [watchedImageEngine(readsAnyName, seen)],
          ephemeralStore: true,
        });
        await system.start();
        account = await system.accounts.createAccount({ plan: 'unmetered', name: 'files' });
      });
      after(async () => {
        await system.stop();
      });

      /** `inMemory`: the upload as a face holds a small one (SpooledFile.inMemory): all of it in its head, nothing on disk. */
      async function convert(bytes: Buffer, name: string, inMemory = false, fields: Record<string, string> = {}): Promise<ConversionRecord> {
        const path = system.blobs.spoolPath();
        if (!inMemory) await writeFile(path, bytes);
        // The first bytes, as a face keeps them (SpooledFile.head): all of a file held in memory.
        const file = { path, size: bytes.length, sha256: '', filename: name, head: bytes.subarray(0, 64 * 1024), ...(inMemory ? { inMemory: true } : {}) };
        const created = (await system.conversions.create(account, { fields: { target: 'webp', ...fields }, options: {}, files: [file] })).record;
        lastCreated = created;
        const id = created.id;
        return waitUntil('the conversion ends', async () => {
          const now = await system.store.getConversion(id);
          return now && now.status !== 'queued' && now.status !== 'processing' ? now : undefined;
        });
      }

      it('converts from the paths it is given and leaves nothing in the work area', async () => {
        const png = await sharp({ create: { width: 120, height: 80, channels: 3, background: '#208040' } }).png().toBuffer();
        const done = await convert(png, 'Holiday photo.png');
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const meta = await sharp(await readFile(system.blobs.localPath('results', done.id)!)).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 120, 80]);

        const job = seen.at(-1)!;
        assert.equal(job.inputBytes, png.length, 'the input was there, whole');
        assert.equal(job.given, false, 'a file, not bytes');
        if (readsAnyName) {
          assert.equal(job.inputPath, system.blobs.localPath('inputs', done.id), 'the stored input itself');
          assert.equal(dirname(job.outputPath), work(), 'an output path of the work area, in no directory of its own');
          assert.doesNotMatch(job.outputPath, /Holiday/);
          assert.deepEqual(await readdir(work()), [], 'no run directory made');
        } else {
          assert.equal(job.inputPath, join(dirname(job.inputPath), 'Holiday photo.png'), 'the input under the user\'s name');
          assert.equal(dirname(dirname(job.inputPath)), work(), 'in a run directory');
          const left = await readdir(work());
          assert.deepEqual(left, [dirname(job.inputPath).slice(work().length + 1)], 'the emptied run directory, kept for the next run');
          assert.deepEqual(await readdir(dirname(job.inputPath)), []);
        }
      });

      it(readsAnyName ? 'takes a small upload held in memory from its record, as bytes: no input file at all' : 'stores a small upload held in memory as a file: the engine reads no bytes without a name of its own', async () => {
        const png = await sharp({ create: { width: 30, height: 20, channels: 4, background: '#ff000080' } }).png().toBuffer();
        assert.ok(png.length <= INLINE_INPUT_BYTES);
        const done = await convert(png, 'Icon.png', true);
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const meta = await sharp(await readFile(system.blobs.localPath('results', done.id)!)).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 30, 20]);
        // Both engines here declare readsBytesOf; only one that also reads any name gets bytes.
        const kept = Buffer.from(lastCreated!.input_bytes ?? '', 'base64');
        if (readsAnyName) assert.equal(kept.compare(png), 0, 'the upload is in the record');
        else assert.equal(lastCreated!.input_bytes, undefined, 'the upload is a stored file');
        const job = seen.at(-1)!;
        assert.equal(job.inputBytes, png.length);
        assert.equal(job.given, readsAnyName);
        assert.equal(job.fileThere, !readsAnyName);
        assert.equal(done.input_bytes, undefined, 'no bytes after the end');
        assert.equal('input_bytes' in system.conversions.publicView(lastCreated!), false, 'never shown');
        // The stored input (where there was one) goes a moment after the end.
        await waitUntil('no stored input', async () => ((await readdir(inputs())).includes(done.id) ? undefined : true));
        if (readsAnyName) assert.deepEqual(await readdir(work()), []);
      });

      it('stores an upload held in memory but larger than the record keeps as a file', async () => {
        const png = await sharp({ create: { width: 120, height: 120, channels: 3, background: '#000000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png({ compressionLevel: 0 }).toBuffer();
        assert.ok(png.length > INLINE_INPUT_BYTES && png.length <= 64 * 1024, `${png.length} bytes: more than the record keeps, less than a face holds in memory`);
        const done = await convert(png, 'Noise.png', true);
        assert.equal(lastCreated!.input_bytes, undefined);
        assert.equal(seen.at(-1)!.given, false);
        assert.equal(seen.at(-1)!.fileThere, true);
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      });

      it('gives an SVG a run directory all the same: what it references beside it is its own', async () => {
        // Beside the stored input are every other conversion's: librsvg would draw
        // <image href="cnv_..."> from there.
        const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="#0a0"/></svg>');
        const done = await convert(svg, 'Drawing.svg');
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const job = seen.at(-1)!;
        assert.equal(job.inputPath, join(dirname(job.inputPath), 'Drawing.svg'), 'under the user\'s name');
        assert.equal(dirname(dirname(job.inputPath)), work(), 'in a run directory');
        assert.notEqual(dirname(job.inputPath), inputs());
      });

      it('gives SVG content sent as a PNG a run directory, and keeps it out of the record', async () => {
        // Declared, the source is what the client says; libvips picks librsvg from the bytes.
        const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="12" height="6"><rect width="12" height="6" fill="#a00"/></svg>');
        for (const inMemory of [false, true]) {
          const done = await convert(svg, 'disguised.png', inMemory, { source: 'png' });
          assert.equal(lastCreated!.source, 'png');
          assert.equal(lastCreated!.input_bytes, undefined, 'not kept in the record');
          const job = seen.at(-1)!;
          assert.equal(job.given, false);
          assert.equal(dirname(dirname(job.inputPath)), work(), 'in a run directory');
          assert.ok(done.status === 'succeeded' || done.status === 'failed', done.status);
        }
      });

      it('fails a file it cannot decode without naming a path, and leaves nothing behind', async () => {
        const before = await readdir(work());
        const done = await convert(Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n'), Buffer.alloc(200, 7)]), 'broken.png');
        assert.equal(done.status, 'failed');
        assert.equal(done.error?.code, 'input_invalid', JSON.stringify(done.error));
        const job = seen.at(-1)!;
        for (const path of [job.inputPath, job.outputPath, work()]) assert.ok(!done.error!.message.includes(path), `${path} in: ${done.error!.message}`);
        assert.doesNotMatch(done.error!.message, /cnv_|blobs/);
        // A failed run's directory is removed, never kept for another run; no file is left.
        assert.deepEqual((await readdir(work())).filter((name) => !before.includes(name)), []);
        assert.deepEqual(await workFiles(join(dir, `data-${readsAnyName}`)), []);
      });
    });
  }
});

describe('a run of an input kept in its record, on an engine that reads no bytes (any more)', () => {
  it('writes the bytes into the run directory under the user\'s name, and empties it after', async () => {
    const blobs = await LocalBlobStore.open(join(dir, 'record-input'));
    const dirs = new RunDirs(() => blobs.workDirFor('run'));
    const files = new RunFiles(blobs, dirs, 'cnv_recordinput');
    const bytes = Buffer.from('the upload, kept in the record');
    const record = { id: 'cnv_recordinput', original_name: 'Notes.png', input_bytes: bytes.toString('base64') } as ConversionRecord;
    const prepared = await files.prepare(record, 'png', 'webp', { anyName: true, bytes: false });
    assert.equal(prepared.inputBytes, undefined);
    assert.match(prepared.inputPath, /\/Notes\.png$/);
    assert.equal((await readFile(prepared.inputPath)).compare(bytes), 0);
    await files.release();
    assert.deepEqual(await readdir(dirname(prepared.inputPath)), [], 'emptied, kept for the next run');
  });
});

describe('a run without a run directory that fails', () => {
  it("leaves nothing of the engine's scratch beside its output (an engine host killed at its limit cannot remove it)", async () => {
    const engine = createPdfPagesEngine({ maxInputPixels: 100_000_000 });
    const seen: string[] = [];
    const system = await openSystem({
      dataDir: join(dir, 'data-scratch'), config: defaultServiceConfig({}), workers: 1, ephemeralStore: true,
      engines: [{
        ...engine,
        convert: async (job: EngineJob) => {
          seen.push(job.outputPath);
          await mkdir(scratchDirFor(job.outputPath));
          await writeFile(join(scratchDirFor(job.outputPath), 'page-1.png'), 'a page of another render');
          throw new ConversionFailure('timeout', 'The conversion took longer than the limit.');
        },
      }],
    });
    try {
      await system.start();
      const account = await system.accounts.createAccount({ plan: 'unmetered', name: 'scratch' });
      const pdf = Buffer.from(await (async () => {
        const document = await PDFDocument.create();
        document.addPage([200, 200]);
        return document.save();
      })());
      const path = system.blobs.spoolPath();
      await writeFile(path, pdf);
      const file = { path, size: pdf.length, sha256: '', filename: 'Report.pdf', head: pdf.subarray(0, 64 * 1024) };
      const { record } = await system.conversions.create(account, { fields: { target: 'png', pages: '1,1' }, options: {}, files: [file] });
      const done = await system.conversions.waitForEnd(record, 30);
      assert.equal(done.status, 'failed');
      assert.equal(dirname(seen[0]!), join(dir, 'data-scratch', 'blobs', 'work'), 'no run directory around the output');
      assert.deepEqual(await readdir(join(dir, 'data-scratch', 'blobs', 'work')), [], 'the scratch went with the failure');
    } finally {
      await system.stop();
    }
  });
});
