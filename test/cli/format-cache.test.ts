import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createLocalClient } from '../../src/client/local-client.ts';
import { lazyEngine, type EngineLoader, type KnownEngine } from '../../src/engines/lazy.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import { cleanEnv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';

/**
 * Start-up of the in-process CLI: the engines' probe findings are cached between runs, a warm
 * `conv formats` loads no conversion library, a conversion loads only its engine, and a stale or
 * damaged cache is rebuilt. The loaded modules are read from the real process (require.cache
 * holds every CommonJS module and native addon: sharp's binding, pdf-lib, fontkit, yaml, …).
 */

let dir: { path: string; remove: () => Promise<void> };
let hook: string;

before(async () => {
  dir = await tempDir('conv-format-cache-');
  hook = join(dir.path, 'loaded.cjs');
  // Preloaded into the conv process: on exit, lists the module files it loaded, on stderr.
  await writeFile(hook, `process.on('exit', () => process._rawDebug('LOADED ' + JSON.stringify(Object.keys(require('module')._cache))));\n`);
});
after(() => dir?.remove());

const env = (home: string) => cleanEnv({ HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache'), NODE_OPTIONS: `--require ${hook}` });
const loaded = (stderr: string): string[] => JSON.parse(/LOADED (.*)/.exec(stderr)![1]!) as string[];
const HEAVY = /node_modules\/(@img\/sharp|sharp|pdf-lib|@pdf-lib|yaml|markdown-it|sanitize-html|csv-parse|@neslinesli93|@embedpdf)\//;

describe('format cache', () => {
  it('a warm `conv formats --json` answers the same and loads no conversion library', async () => {
    const home = join(dir.path, 'formats');
    const cold = await spawnConv(['formats', '--json'], { env: env(home) });
    assert.equal(cold.code, 0, cold.stderr);
    const file = JSON.parse(await readFile(join(home, 'cache', 'conv', 'formats.json'), 'utf8')) as { fingerprint: string; engines: KnownEngine[] };
    assert.deepEqual(file.engines.map((e) => e.name), ['image', 'raster', 'media', 'html', 'pdf', 'pdfops', 'pdfpages', 'data', 'office', 'postscript', 'markup', 'ocr']);
    assert.ok(loaded(cold.stderr).some((path) => HEAVY.test(path)), 'the cold run probed the engines');

    const warm = await spawnConv(['formats', '--json'], { env: env(home) });
    assert.equal(warm.code, 0, warm.stderr);
    assert.deepEqual(JSON.parse(warm.stdout), JSON.parse(cold.stdout));
    assert.deepEqual(loaded(warm.stderr).filter((path) => HEAVY.test(path)), []);
    const png = await spawnConv(['formats', 'png', '--json'], { env: env(home) });
    assert.equal(png.code, 0);
    assert.ok((JSON.parse(png.stdout) as { data: { target: string }[] }).data.some((entry) => entry.target === 'webp'));

    // A cache written for another fingerprint (another version, other binaries) is not used.
    await writeFile(join(home, 'cache', 'conv', 'formats.json'), JSON.stringify({ ...file, fingerprint: 'other', engines: file.engines.slice(0, 1) }));
    const rebuilt = await spawnConv(['formats', '--json'], { env: env(home) });
    assert.deepEqual(JSON.parse(rebuilt.stdout), JSON.parse(cold.stdout));
    assert.equal((JSON.parse(await readFile(join(home, 'cache', 'conv', 'formats.json'), 'utf8')) as { fingerprint: string }).fingerprint, file.fingerprint);
    // A damaged one neither.
    await writeFile(join(home, 'cache', 'conv', 'formats.json'), '{"fingerprint": ');
    const repaired = await spawnConv(['formats', '--json'], { env: env(home) });
    assert.deepEqual(JSON.parse(repaired.stdout), JSON.parse(cold.stdout));
  });

  it('a warm PNG conversion loads sharp but not pdf-lib or the data libraries', async () => {
    const home = join(dir.path, 'convert');
    await writeFile(join(dir.path, 'dot.png'), await sharp({ create: { width: 9, height: 7, channels: 3, background: '#123456' } }).png().toBuffer());
    assert.equal((await spawnConv(['formats'], { env: env(home) })).code, 0);
    const tmp = join(dir.path, 'tmp');
    await mkdir(tmp);
    const result = await spawnConv(['convert', 'dot.png', '--to', 'webp', '-o', 'dot.webp'], { env: { ...env(home), TMPDIR: tmp }, cwd: dir.path });
    assert.equal(result.code, 0, result.stderr);
    const meta = await sharp(await readFile(join(dir.path, 'dot.webp'))).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 9, 7]);
    const heavy = loaded(result.stderr).filter((path) => HEAVY.test(path));
    assert.ok(heavy.some((path) => /sharp/.test(path)), 'sharp was loaded');
    assert.deepEqual(heavy.filter((path) => !/sharp/.test(path)), []);
    // Nothing of the in-process service is left behind: no files, no store on tmpfs.
    assert.deepEqual(await readdir(tmp), []);
    for (const name of await readdir('/dev/shm').catch(() => [] as string[])) {
      if (!name.startsWith('conv-local-')) continue;
      const target = await readlink(join('/dev/shm', name, 'blobs')).catch(() => '');
      assert.ok(!target.startsWith(tmp), `/dev/shm/${name} was left behind`);
    }
  });

  it('LocalClient gives the same answers with and without the cache', async () => {
    const home = join(dir.path, 'client');
    const clientEnv = cleanEnv({ HOME: home, XDG_CACHE_HOME: join(home, 'cache') });
    const probed = await createLocalClient({ env: clientEnv, formatCache: false });
    const first = await createLocalClient({ env: clientEnv });
    const cached = await createLocalClient({ env: clientEnv });
    try {
      const expected = await probed.listFormats();
      assert.deepEqual(await first.listFormats(), expected);
      assert.deepEqual(await cached.listFormats(), expected);
      for (const source of ['png', 'jpeg', 'mp4', 'csv', 'txt']) {
        assert.deepEqual(await cached.getFormat(source), await probed.getFormat(source), source);
      }
      await assert.rejects(cached.getFormat('nope'), { code: 'not_found' });
    } finally {
      await Promise.all([probed.close(), first.close(), cached.close()]);
    }
  });
});

describe('lazyEngine', () => {
  function fakeLoader(name = 'fake'): EngineLoader & { loads: number; probes: number; converted: string[] } {
    const loader = {
      name: 'fake',
      loads: 0,
      probes: 0,
      converted: [] as string[],
      async load(): Promise<Engine> {
        loader.loads += 1;
        return {
          name,
          probe: async () => {
            loader.probes += 1;
            return { name, available: true };
          },
          pairs: () => [{ source: 'a', target: 'b', engine: name, kind: 'data', options: [], variants: [] }],
          formats: () => [{ key: 'a', extensions: ['a'], mime: 'text/a' }],
          convert: async (job: EngineJob) => {
            loader.converted.push(job.inputPath);
          },
        };
      },
    };
    return loader;
  }
  const job = (inputPath: string) => ({ inputPath }) as EngineJob;

  it('without findings: probe loads the engine and records what it declared', async () => {
    const loader = fakeLoader();
    const engine = lazyEngine(loader);
    assert.equal(loader.loads, 0);
    assert.equal((await engine.probe()).available, true);
    assert.deepEqual(engine.pairs().map((p) => p.target), ['b']);
    assert.deepEqual(engine.known()?.formats.map((f) => f.key), ['a']);
    await engine.convert(job('x'));
    assert.deepEqual([loader.loads, loader.probes, loader.converted], [1, 1, ['x']]);
  });

  it('with findings: nothing loads until the first conversion, which loads and probes once', async () => {
    const loader = fakeLoader();
    const known: KnownEngine = { name: 'fake', status: { name: 'fake', available: true }, formats: [], pairs: [] };
    const engine = lazyEngine(loader, known);
    await engine.probe();
    assert.deepEqual(engine.pairs(), []);
    assert.equal(loader.loads, 0);
    await Promise.all([engine.convert(job('1')), engine.convert(job('2'))]);
    await engine.convert(job('3'));
    assert.deepEqual([loader.loads, loader.probes, loader.converted], [1, 1, ['1', '2', '3']]);
  });

  it('refuses an engine whose name is not the loader\'s', async () => {
    await assert.rejects(lazyEngine(fakeLoader('other')).probe(), /created an engine named "other"/);
  });
});
