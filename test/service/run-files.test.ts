/**
 * What a run gives its engine. An engine that reads files whatever they are called (the image
 * engine: Engine.readsAnyName) gets the stored input itself and an output path of the store's
 * work area, and no run directory is made for it; any other gets a directory of its own with the
 * input under the user's name. Either way nothing of the run is left in the work area, and an
 * engine's message names neither path.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { waitUntil } from '../helpers/ops-support.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-run-files-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The image engine, telling each job's paths (and whether its input was there) as it converts. */
function watchedImageEngine(readsAnyName: boolean, seen: { inputPath: string; outputPath: string; inputBytes: number }[]): Engine {
  const engine = createImageEngine({ maxInputPixels: 100_000_000 });
  return {
    ...engine,
    readsAnyName,
    convert: async (job: EngineJob) => {
      seen.push({ inputPath: job.inputPath, outputPath: job.outputPath, inputBytes: (await readFile(job.inputPath)).length });
      return engine.convert(job);
    },
  };
}

describe('the files of a run', () => {
  for (const readsAnyName of [true, false]) {
    describe(readsAnyName ? 'of an engine that reads any name' : 'of an engine that needs the user\'s name', () => {
      let system: ConversionSystem;
      let account: AccountRecord;
      const seen: { inputPath: string; outputPath: string; inputBytes: number }[] = [];
      const work = () => join(dir, `data-${readsAnyName}`, 'blobs', 'work');
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

      async function convert(bytes: Buffer, name: string): Promise<ConversionRecord> {
        const path = system.blobs.spoolPath();
        await writeFile(path, bytes);
        const file = { path, size: bytes.length, sha256: '', filename: name };
        const id = (await system.conversions.create(account, { fields: { target: 'webp' }, options: {}, files: [file] })).record.id;
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

      it('fails a file it cannot decode without naming a path, and leaves nothing behind', async () => {
        const before = await readdir(work());
        const done = await convert(Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n'), Buffer.alloc(200, 7)]), 'broken.png');
        assert.equal(done.status, 'failed');
        assert.equal(done.error?.code, 'input_invalid', JSON.stringify(done.error));
        const job = seen.at(-1)!;
        for (const path of [job.inputPath, job.outputPath, work()]) assert.ok(!done.error!.message.includes(path), `${path} in: ${done.error!.message}`);
        assert.doesNotMatch(done.error!.message, /cnv_|blobs/);
        // A failed run's directory is removed, never kept for another run.
        assert.deepEqual((await readdir(work())).filter((name) => !before.includes(name)), []);
        if (readsAnyName) assert.deepEqual(await readdir(work()), []);
      });
    });
  }
});
