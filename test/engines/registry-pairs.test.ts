/**
 * Every pair the format registry offers, proven from the registry itself:
 * (a) the image engine's pairs, one generated test each on sharp-made fixtures, plus its options,
 *     animations and the decompression-bomb guard;
 * (b) the registry's pair set is exactly the union of what the per-engine suites generate their
 *     tests from, so a new pair without a conversion test fails here;
 * (c) through a real daemon: /formats and /formats/{source} list exactly the registry, with the
 *     credit weight of each kind, and one conversion per source (its first target) succeeds,
 *     is charged that weight and decodes.
 */
import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { defaultEngines } from '../../src/engines/catalog.ts';
import { createDataEngine } from '../../src/engines/data/data-engine.ts';
import { createMarkupEngine } from '../../src/engines/markup/markup-engine.ts';
import { createMediaEngine } from '../../src/engines/media/media-engine.ts';
import { CHAIN_ENGINE } from '../../src/engines/chain.ts';
import { createOcrEngine } from '../../src/engines/ocr/ocr-engine.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { createPdfEngine } from '../../src/engines/pdf/pdf-engine.ts';
import { createPdfOperationsEngine } from '../../src/engines/pdfops/pdfops-engine.ts';
import { createPdfPagesEngine } from '../../src/engines/pdfpages/pdfpages-engine.ts';
import { createGhostscriptEngine } from '../../src/engines/postscript/ghostscript-engine.ts';
import { createHtmlEngine } from '../../src/engines/html/html-engine.ts';
import { createRasterEngine } from '../../src/engines/raster/raster-engine.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import type { ConversionKind, ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import type { FormatDetails, FormatListing } from '../../src/client/types.ts';
import { startDaemon, ROOT, type DaemonHandle } from '../helpers/daemon.ts';
import {
  ANIMATION_FRAMES, IMAGE_HEIGHT, IMAGE_WIDTH, animatedImage, assertImage, assertOutput, makeFixture, mediaTools,
  type Fixture,
} from '../helpers/registry-pairs-fixtures.ts';
import { pngBomb } from '../helpers/hostile-files.ts';
import { download, getJson, meteredClient, remainingCredits, uploadFile, waitForEnd, type Client } from '../helpers/registry-pairs-daemon.ts';
import { rejectsWith } from '../helpers/failure.ts';

const config = defaultServiceConfig();
const registry = await FormatRegistry.create(defaultEngines({ maxInputPixels: config.maxInputPixels }), config.creditWeights);
const pairs = registry.allPairs();
const imagePairs = pairs.filter((pair) => pair.engine === 'image');
const tools = await mediaTools();
const key = (pair: Pick<ConversionPair, 'source' | 'target'>) => `${pair.source}->${pair.target}`;

/** The default credit weights, written out here rather than read from the code under test. */
const WEIGHTS: Record<ConversionKind, number> = { image: 1, pdf: 1, data: 1, audio: 2, document: 2, video: 4, ocr: 3 };

/** The kind of the heaviest step, by the weights above: what a chain is charged as. */
const heaviest = (steps: readonly ConversionPair[]): ConversionKind => steps.map((step) => step.kind).reduce((a, b) => (WEIGHTS[b] > WEIGHTS[a] ? b : a));

let dir: string;
let counter = 0;
/** One fixture per source, made once: concurrent tests share the promise, never a half-written file. */
const fixtures = new Map<string, Promise<Fixture>>();
const provenHere = new Set<string>();
let daemonConversions = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-pairs-'));
});

after(async () => {
  const bySuite = ['media', 'raster', 'pdf', 'pdfops', 'pdfpages', 'postscript', 'data', 'html', 'office', 'markup'].map((engine) => `${engine} ${pairs.filter((p) => p.engine === engine).length}`).join(', ');
  console.log(
    `registry: ${pairs.length} pairs offered; ${provenHere.size} of ${imagePairs.length} image pairs proven here; ` +
    `the other ${pairs.length - imagePairs.length} by their generated suites (${bySuite}); ` +
    `${daemonConversions} conversions through the daemon`,
  );
  if (dir) await rm(dir, { recursive: true, force: true });
});

function fixture(source: string): Promise<Fixture> {
  let found = fixtures.get(source);
  if (!found) fixtures.set(source, (found = makeFixture(dir, source, tools)));
  return found;
}

function pairOf(source: string, target: string, from: FormatRegistry = registry): ConversionPair {
  const pair = from.pair(source, target);
  assert.ok(pair, `the registry offers ${source} -> ${target}`);
  return pair;
}

/** Options as the service hands them to an engine: validated against the pair, defaults applied. */
function options(pair: ConversionPair, raw: Record<string, unknown> = {}): ConversionOptions {
  const outcome = validateOptions(pair, raw);
  assert.ok(outcome.ok, `options ${JSON.stringify(raw)} are valid for ${key(pair)}`);
  return outcome.options;
}

/** Runs a pair on the registry's own engine; returns the output path. */
async function convert(pair: ConversionPair, inputPath: string, raw: Record<string, unknown> = {}, from: FormatRegistry = registry): Promise<string> {
  const engine: Engine | undefined = from.engine(pair.engine);
  assert.ok(engine, `engine ${pair.engine} is available`);
  const job: EngineJob = {
    inputPath, outputPath: join(dir, `out-${++counter}.${pair.target}`), source: pair.source, target: pair.target,
    variant: pair.variants[0]?.key ?? null, options: options(pair, raw), signal: new AbortController().signal,
    onProgress: () => undefined,
  };
  await engine.convert(job);
  return job.outputPath;
}

async function writeInput(name: string, data: Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

// ------------------------------------------------------------------------- (a) image pairs

describe('(a) every image pair of the registry converts, checked with sharp', { concurrency: 2 }, () => {
  it('the image engine offers jpg, png, webp, gif, tiff, svg, svgz, xpm (and avif, heif when libheif reads them) to six targets', () => {
    const sources = new Set(imagePairs.map((p) => p.source));
    for (const source of ['jpg', 'png', 'webp', 'gif', 'tiff', 'svg', 'svgz', 'xpm']) assert.ok(sources.has(source), source);
    for (const pair of imagePairs) {
      assert.equal(pair.kind, 'image');
      assert.deepEqual(pair.variants, []);
    }
    assert.equal(imagePairs.length, sources.size * 6);
  });

  for (const pair of imagePairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const input = await fixture(pair.source);
      await assertOutput(pair, await convert(pair, input.path), input, tools);
      provenHere.add(key(pair));
    });
  }

  // An animation keeps its frames where the target can hold them (gif, webp, tiff's pages), else the first.
  for (const source of ['gif', 'webp'] as const) {
    for (const pair of imagePairs.filter((p) => p.source === source)) {
      it(`animated ${source} -> ${pair.target}`, async () => {
        const input = await writeInput(`animated-${source}-${pair.target}.${source}`, await animatedImage(source));
        const animatedFixture: Fixture = { path: input, width: IMAGE_WIDTH, height: IMAGE_HEIGHT, frames: ANIMATION_FRAMES };
        const output = await convert(pair, input);
        await assertOutput(pair, output, animatedFixture, tools);
        if (pair.target === 'gif' || pair.target === 'webp' || pair.target === 'tiff') {
          assert.equal((await sharp(output).metadata()).pages, ANIMATION_FRAMES, 'every frame kept');
        } else {
          // One frame: the height is a frame's, not the frames stacked.
          assert.equal((await sharp(output).metadata()).height, IMAGE_HEIGHT);
        }
      });
    }
  }
});

describe('(a) a multi-page TIFF', () => {
  /** Three pages of 40 x 30, red, green and blue. */
  const COLOURS: [number, number, number][] = [[255, 0, 0], [0, 255, 0], [0, 0, 255]];
  const threePages = async () => {
    const pages = await Promise.all(COLOURS.map(([r, g, b]) => sharp({ create: { width: 40, height: 30, channels: 3, background: { r, g, b } } }).raw().toBuffer()));
    return writeInput('three-pages.tiff', await sharp(Buffer.concat(pages), { raw: { width: 40, height: 90, channels: 3, pageHeight: 30 } }).tiff().toBuffer());
  };
  /** The colour at the middle of each page of a (multi-page) image. */
  const pageColours = async (path: string) => {
    const meta = await sharp(path).metadata();
    const { data, info } = await sharp(path, { pages: -1 }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const pages = meta.pages ?? 1;
    const height = info.height / pages;
    return Array.from({ length: pages }, (_, page) => {
      const at = ((page * height + Math.floor(height / 2)) * info.width + Math.floor(info.width / 2)) * info.channels;
      return [...data.subarray(at, at + 3)].map((value) => (value > 127 ? 255 : 0));
    });
  };

  for (const target of ['tiff', 'gif', 'webp'] as const) {
    it(`-> ${target}: every page kept, in order`, async () => {
      const output = await convert(pairOf('tiff', target), await threePages());
      assert.deepEqual(await pageColours(output), COLOURS);
      const meta = await sharp(output).metadata();
      assert.deepEqual([meta.width, meta.pageHeight ?? meta.height], [40, 30], 'pages of the input\'s size');
    });
  }

  it('-> png with page=2: the second page; page=4: input_invalid naming the count', async () => {
    const input = await threePages();
    const second = await convert(pairOf('tiff', 'png'), input, { page: 2 });
    assert.deepEqual(await pageColours(second), [COLOURS[1]]);
    assert.equal((await sharp(second).metadata()).height, 30);
    const first = await convert(pairOf('tiff', 'jpg'), input);
    assert.deepEqual(await pageColours(first), [COLOURS[0]], 'no page given: the first');
    const missing = await rejectsWith(convert(pairOf('tiff', 'png'), input, { page: 4 }), 'input_invalid');
    assert.match(missing.message, /has 3 pages; page 4 does not exist/);
  });

  it('-> tiff with page=3: that page alone', async () => {
    const output = await convert(pairOf('tiff', 'tiff'), await threePages(), { page: 3 });
    assert.deepEqual(await pageColours(output), [COLOURS[2]]);
  });
});

describe('(a) image options', { concurrency: 2 }, () => {
  const noisy = () => sharp({ create: { width: 160, height: 120, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 50 } } }).png().toBuffer();

  for (const pair of imagePairs.filter((p) => p.source === 'png' && p.options.some((o) => o.name === 'quality'))) {
    it(`quality: png -> ${pair.target} at 10 is smaller than at 90, both decode`, async () => {
      const input = await writeInput(`noisy-${pair.target}.png`, await noisy());
      const low = await convert(pair, input, { quality: 10 });
      const high = await convert(pair, input, { quality: '90' });
      const [lowSize, highSize] = [(await stat(low)).size, (await stat(high)).size];
      assert.ok(lowSize < highSize * 0.7, `${lowSize} bytes at 10 vs ${highSize} at 90`);
      await assertImage(low, pair.target, 160, 120);
      await assertImage(high, pair.target, 160, 120);
    });
  }

  it('quality out of range, a fit that does not exist and width 0 are refused by the descriptors', () => {
    const jpg = pairOf('png', 'jpg');
    for (const raw of [{ quality: 0 }, { quality: 101 }, { quality: 'high' }, { fit: 'stretch' }, { width: 0 }, { height: 16385 }, { strip: 'maybe' }]) {
      assert.equal(validateOptions(jpg, raw).ok, false, JSON.stringify(raw));
    }
    assert.equal(validateOptions(pairOf('png', 'png'), { quality: 50 }).ok, false, 'png has no quality');
  });

  const sizes: [Record<string, unknown>, number, number][] = [
    [{ width: 48 }, 48, 32],
    [{ height: 32 }, 48, 32],
    [{ width: 48, height: 48 }, 48, 32], // fit inside is the default
    [{ width: 48, height: 48, fit: 'cover' }, 48, 48],
    [{ width: 48, height: 48, fit: 'contain' }, 48, 48],
    [{ width: 48, height: 48, fit: 'fill' }, 48, 48],
    [{ width: 48, height: 48, fit: 'outside' }, 72, 48],
    [{ width: 192 }, 192, 128], // enlarges when asked to
  ];
  for (const [raw, width, height] of sizes) {
    it(`width/height/fit ${JSON.stringify(raw)} -> ${width}x${height}`, async () => {
      const output = await convert(pairOf('png', 'png'), (await fixture('png')).path, raw);
      await assertImage(output, 'png', width, height);
    });
  }

  it('fit contain letterboxes, fit fill stretches: the corner pixel tells them apart', async () => {
    const wide = await writeInput('wide.png', await sharp({ create: { width: 96, height: 32, channels: 3, background: '#ff0000' } }).png().toBuffer());
    const pixel = async (path: string) => (await sharp(path).extract({ left: 0, top: 0, width: 1, height: 1 }).raw().toBuffer())[0];
    const contained = await convert(pairOf('png', 'png'), wide, { width: 48, height: 48, fit: 'contain' });
    const filled = await convert(pairOf('png', 'png'), wide, { width: 48, height: 48, fit: 'fill' });
    assert.equal(await pixel(contained), 0, 'contain: black bars above and below');
    assert.equal(await pixel(filled), 255, 'fill: red to the corner');
  });

  it('strip (default true) removes EXIF and ICC; strip=false keeps them', async () => {
    const tagged = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#406080' } })
      .withExif({ IFD0: { ImageDescription: 'convd-strip-test' } })
      .withIccProfile('p3')
      .jpeg()
      .toBuffer();
    const input = await writeInput('tagged.jpg', tagged);
    const source = await sharp(input).metadata();
    assert.ok(source.exif && source.icc, 'the fixture carries EXIF and ICC');
    for (const target of ['jpg', 'webp']) {
      const stripped = await sharp(await convert(pairOf('jpg', target), input)).metadata();
      assert.equal(stripped.exif, undefined, `${target}: no EXIF by default`);
      assert.equal(stripped.icc, undefined, `${target}: no ICC by default`);
      const kept = await sharp(await convert(pairOf('jpg', target), input, { strip: 'false' })).metadata();
      assert.ok(kept.exif?.includes('convd-strip-test'), `${target}: EXIF kept with strip=false`);
      assert.ok(kept.icc, `${target}: ICC kept with strip=false`);
    }
  });
});

describe('(a) decompression bomb', () => {
  it('a PNG declaring 10^10 pixels is input_invalid under the default limit, at once', async () => {
    const bomb = await writeInput('bomb.png', pngBomb());
    const began = Date.now();
    for (const target of ['webp', 'jpg']) {
      const failure = await rejectsWith(convert(pairOf('png', target), bomb), 'input_invalid');
      assert.match(failure.message, /100,000 x 100,000 pixels .*at most 100,000,000 pixels/);
    }
    assert.ok(Date.now() - began < 3000, 'refused from the header, not decoded');
  });

  it('the catalog passes maxInputPixels to the image and pdf engines: one pixel over fails, at the limit passes', async () => {
    const limited = await FormatRegistry.create(defaultEngines({ maxInputPixels: 1000 * 1000 }));
    const image = (width: number) => sharp({ create: { width, height: 1000, channels: 3, background: '#101010' } }).png({ compressionLevel: 1 }).toBuffer();
    const over = await writeInput('over.png', await image(1001));
    const at = await writeInput('at.png', await image(1000));
    const failure = await rejectsWith(convert(pairOf('png', 'webp', limited), over, {}, limited), 'input_invalid');
    assert.match(failure.message, /1,001 x 1,000 pixels \(1,001,000\); images of at most 1,000,000 pixels/);
    await rejectsWith(convert(pairOf('png', 'pdf', limited), over, {}, limited), 'input_invalid');
    await assertImage(await convert(pairOf('png', 'webp', limited), at, {}, limited), 'webp', 1000, 1000);
  });
});

// ------------------------------------------------------------------------- (b) coverage

/** The generated suite of each engine, and how it makes its engine (as it runs in that suite). */
const SUITES: Record<string, { file: string; factory: string; create: () => Engine }> = {
  media: { file: 'test/engines/media.test.ts', factory: 'createMediaEngine', create: () => createMediaEngine() },
  raster: { file: 'test/engines/raster.test.ts', factory: 'createRasterEngine', create: () => createRasterEngine() },
  postscript: { file: 'test/engines/postscript.test.ts', factory: 'createGhostscriptEngine', create: () => createGhostscriptEngine() },
  html: { file: 'test/engines/html.test.ts', factory: 'createHtmlEngine', create: () => createHtmlEngine() },
  pdf: { file: 'test/engines/pdf.test.ts', factory: 'createPdfEngine', create: () => createPdfEngine() },
  pdfops: { file: 'test/engines/pdf-operations.test.ts', factory: 'createPdfOperationsEngine', create: () => createPdfOperationsEngine() },
  pdfpages: { file: 'test/engines/pdf-pages.test.ts', factory: 'createPdfPagesEngine', create: () => createPdfPagesEngine() },
  data: { file: 'test/engines/data.test.ts', factory: 'createDataEngine', create: () => createDataEngine() },
  office: { file: 'test/engines/office.test.ts', factory: 'createOfficeEngine', create: () => createOfficeEngine() },
  markup: { file: 'test/engines/markup.test.ts', factory: 'createMarkupEngine', create: () => createMarkupEngine() },
  ocr: { file: 'test/engines/ocr.test.ts', factory: 'createOcrEngine', create: () => createOcrEngine() },
};

/**
 * Engines that need a system package (LibreOffice, pandoc, Ghostscript, Chromium): where it is missing they offer no pairs
 * and their suite skips, except under CI (CI=true), which installs them and must prove them.
 */
const SYSTEM_ENGINES = new Set(['office', 'markup', 'postscript', 'html', 'ocr']);
const mayBeMissing = (engine: string) => SYSTEM_ENGINES.has(engine) && process.env.CI !== 'true';

describe('(b) the registry offers exactly the pairs the generated suites prove', () => {
  const covered = new Map<string, Set<string>>([['image', new Set(imagePairs.map(key))]]);

  it('every pair belongs to an engine that has a generated suite (image: this file)', () => {
    const engines = new Set(pairs.map((p) => p.engine));
    for (const engine of engines) assert.ok(engine === 'image' || engine === CHAIN_ENGINE || engine in SUITES, `engine ${engine} has no generated per-pair suite: add one`);
    for (const status of registry.statuses) {
      if (!mayBeMissing(status.name)) assert.ok(status.available, `${status.name} is available here: ${status.detail ?? ''}`);
    }
  });

  for (const [engineName, suite] of Object.entries(SUITES)) {
    it(`${suite.file} generates one test per ${suite.factory}().pairs(), the same pairs the registry offers`, async () => {
      const text = await readFile(join(ROOT, suite.file), 'utf8');
      // How those suites are written: the engine as the registry would get it, its own pairs(),
      // one `it` per pair, and a failure when a pair has no fixture or expectation.
      assert.match(text, new RegExp(`const engine = ${suite.factory}\\(\\);`), 'makes its engine');
      assert.match(text, /const pairs = engine\.pairs\(\);/, 'takes the pairs from the engine');
      assert.match(text, /for \(const pair of pairs\) \{\s*it\(`\$\{pair\.source\} -> \$\{pair\.target\}`/, 'one test per pair');
      assert.match(text, /add one/, 'a pair without a fixture or expectation fails');
      const engine = suite.create();
      const available = (await engine.probe()).available;
      assert.ok(available || mayBeMissing(engineName), `${engineName} is available`);
      const suitePairs = new Set(engine.pairs().map(key));
      const offered = new Set(pairs.filter((p) => p.engine === engineName).map(key));
      // A pair an engine earlier in the catalog declares too is routed there (svg -> pdf: Chromium's
      // vectors before the pdf engine's pixels); both suites prove it, this one as the fallback.
      const routedElsewhere = [...suitePairs].filter((pair) => !offered.has(pair));
      // Or to a chain whose first step declares it makes that target better (csv -> html -> pdf over
      // LibreOffice's sheet), proven in test/engines/chains.test.ts.
      for (const pair of routedElsewhere) {
        const [source, target] = pair.split('->') as [string, string];
        const offeredPair = registry.pair(source, target);
        const by = offeredPair?.engine;
        const preferredChain = by === CHAIN_ENGINE && offeredPair?.steps?.[0]?.preferredFor?.includes(target) === true;
        // Or it joins the pair another engine (or chain) serves: as its fallback, or as a step an option adds (OCR).
        const added = offeredPair?.withOption?.pair;
        const joined = offeredPair?.fallback?.engine === engineName || added?.engine === engineName || added?.steps?.some((step) => step.engine === engineName) === true;
        assert.ok(preferredChain || joined || (by && by !== CHAIN_ENGINE && by in SUITES), `${pair} of ${engineName} is offered by another engine with a suite of its own (${by ?? 'none'})`);
      }
      assert.deepEqual([...offered].sort(), [...suitePairs].filter((pair) => offered.has(pair)).sort());
      covered.set(engineName, offered);
    });
  }

  it('test/engines/chains.test.ts converts a set of chains covering every source and second step the registry composes', async () => {
    const text = await readFile(join(ROOT, 'test/engines/chains.test.ts'), 'utf8');
    assert.match(text, /const chains = registry\.allPairs\(\)\.filter\(\(pair\) => pair\.engine === CHAIN_ENGINE\);/, 'takes the chains from a registry of the default engines');
    assert.match(text, /if \(sources\.has\(pair\.source\) && lasts\.has\(secondStep\(pair\)\)\) continue;/, 'a chain is left out only when its source and its second step are both covered');
    assert.match(text, /for \(const pair of covering\) \{\s*it\(`\$\{pair\.source\} -> \$\{pair\.target\}`/, 'one test per chain of the covering set');
    assert.match(text, /await assertOutput\(pair, made\.outputPath, input, tools\);/, 'each output decoded');
    const decoders = await readFile(join(ROOT, 'test/helpers/registry-pairs-fixtures.ts'), 'utf8');
    assert.match(decoders, /no decoder for chain target \$\{pair\.target\}: add one/, 'a chain without a decoder fails');
    covered.set(CHAIN_ENGINE, new Set(pairs.filter((p) => p.engine === CHAIN_ENGINE).map(key)));
  });

  it('the union of the suites is the registry, and each pair is routed to one engine only', () => {
    assert.equal(covered.size, 2 + Object.keys(SUITES).length, 'every suite was checked');
    const union = new Set<string>();
    let declared = 0;
    for (const set of covered.values()) {
      declared += set.size;
      for (const pair of set) union.add(pair);
    }
    assert.deepEqual([...union].sort(), pairs.map(key).sort());
    assert.equal(declared, union.size, 'a pair offered by two engines is routed to one of them only');
  });
});

// ------------------------------------------------------------------------- (c) through the daemon

describe('(c) through a real daemon: listing, credit weights, one conversion per source', () => {
  let daemon: DaemonHandle;
  let client: Client;

  before(async () => {
    daemon = await startDaemon();
    client = await meteredClient(daemon, 'pro');
  });

  after(async () => {
    await daemon?.dispose();
  });

  it('/formats lists exactly the registry; /formats/{source} gives each kind its weight, options and variants', async () => {
    const listing = await getJson<FormatListing>(client, '/formats');
    assert.equal(listing.status, 200);
    assert.deepEqual(listing.body.data.map((entry) => entry.source).sort(), registry.sources());
    const kinds = new Set<ConversionKind>();
    let listed = 0;
    for (const entry of listing.body.data) {
      assert.deepEqual(entry.targets, registry.targetsOf(entry.source).map((p) => p.target), entry.source);
      const details = await getJson<FormatDetails>(client, `/formats/${entry.source}`);
      assert.equal(details.status, 200);
      assert.equal(details.body.source, entry.source);
      assert.deepEqual(details.body.data.map((d) => d.target), entry.targets);
      for (const target of details.body.data) {
        const pair = pairOf(entry.source, target.target);
        kinds.add(pair.kind);
        listed++;
        assert.equal(target.credit_weight, WEIGHTS[pair.kind], `${key(pair)} (${pair.kind})`);
        // The option that adds a step (OCR) says what the conversion costs with it.
        const added = pair.withOption;
        const charged = added ? target.options.find((option) => option.name === added.option) : undefined;
        if (added) assert.ok(charged?.label.endsWith(`(credit weight ${WEIGHTS[added.pair.steps ? heaviest(added.pair.steps) : added.pair.kind]} instead of ${WEIGHTS[pair.kind]})`), `${key(pair)}: ${charged?.label}`);
        assert.deepEqual(target.options.map((option) => (option === charged ? { ...option, label: pair.options.find((own) => own.name === option.name)!.label } : option)), pair.options);
        assert.deepEqual(target.variants, pair.variants);
        assert.equal(target.max_upload_mb, 5000, 'the pro plan limit');
      }
    }
    assert.equal(listed, pairs.length);
    assert.deepEqual([...kinds].sort(), ['audio', 'data', 'document', 'image', 'ocr', 'pdf', 'video']);
  });

  /** Every kind the registry offers a pair of. */
  const kinds = new Set(pairs.map((pair) => pair.kind));

  it('every source converts to its first listed target (plus one pair of each kind), is charged its weight, and decodes', async () => {
    const picks = registry.sources().map((source) => registry.targetsOf(source)[0]!);
    for (const kind of [...kinds]) {
      if (!picks.some((p) => p.kind === kind)) picks.push(pairs.find((p) => p.kind === kind)!);
    }
    const before = await remainingCredits(client);
    assert.equal(typeof before, 'number');
    let charged = 0;
    let next = 0;
    const work = async () => {
      while (next < picks.length) {
        const pair = picks[next++]!;
        const input = await fixture(pair.source);
        const created = await uploadFile(client, { target: pair.target, wait: '30' }, input.path, `input.${pair.source}`);
        assert.ok(created.status === 200 || created.status === 202, `${key(pair)}: ${created.status} ${JSON.stringify(created.body)}`);
        const done = created.body.status === 'succeeded' ? created.body : await waitForEnd(client, created.body.id);
        assert.equal(done.status, 'succeeded', `${key(pair)}: ${JSON.stringify(done.error)}`);
        assert.equal(done.credits, WEIGHTS[pair.kind], `${key(pair)} costs its ${pair.kind} weight`);
        charged += done.credits;
        const output = join(dir, `daemon-${done.id}.${pair.target}`);
        await download(client, done.id, output);
        await assertOutput(pair, output, input, tools);
        daemonConversions++;
      }
    };
    await Promise.all([work(), work()]);
    assert.equal(daemonConversions, picks.length);
    assert.equal(await remainingCredits(client), before! - charged, 'the balance went down by what was charged');
  });
});
