/**
 * SVG -> PDF as vectors through Chromium: the drawing on a page of its own
 * size (px -> pt: 0.75; from its viewBox where its size is missing or in %), its text in the
 * PDF's text, no picture on the page; svgz unpacked first; the variants and margin of the pdf
 * engine's pair; nothing but the drawing itself loads (a loopback canary sees no connection, and
 * nothing is drawn where a refused image was); its script runs, bounded by the time limit; and
 * the registry: Chromium's vectors where it runs, the pdf engine's pixels where it does not.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { defaultEngines } from '../src/engines/catalog.ts';
import { createHtmlEngine } from '../src/engines/html/html-engine.ts';
import { ZIP_LIMITS } from '../src/engines/html/site.ts';
import { createPdfEngine } from '../src/engines/pdf/pdf-engine.ts';
import { createPdfPagesEngine } from '../src/engines/pdfpages/pdfpages-engine.ts';
import type { Engine, EngineJob } from '../src/engines/types.ts';
import { ConversionFailure } from '../src/errors/api-error.ts';
import { validateOptions } from '../src/formats/options.ts';
import { FormatRegistry } from '../src/formats/registry.ts';
import type { ConversionPair } from '../src/engines/pairs.ts';
import type { ConversionOptions } from '../src/model/conversion.ts';
import { startCanary, type Canary } from './helpers/canary.ts';
import { rejectsWith } from './helpers/failure.ts';
import { pdfPageTexts } from './helpers/pdf-text.ts';
import { assertPageSize, assertVectorPdf, drawingSvg, imagesOnPage } from './helpers/svg.ts';

const engine = createHtmlEngine();
const status = await engine.probe();
const skip = !status.available && process.env.CI !== 'true' ? `Chromium is not installed: ${status.detail ?? ''}` : false;
const pdfEngine = createPdfEngine();
await pdfEngine.probe();

let dir: string;
let counter = 0;
/** A loopback server that counts every connection made to it: a drawing must make none. */
let canary: Canary;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-html-svg-'));
  canary = await startCanary();
});
after(async () => {
  await engine.close?.();
  canary?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function write(name: string, data: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

function pairOf(from: Engine, source: string, target = 'pdf'): ConversionPair {
  const pair = from.pairs().find((p) => p.source === source && p.target === target);
  assert.ok(pair, `${from.name} offers ${source} -> ${target}`);
  return pair;
}

function job(source: string, inputPath: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}, from: Engine = engine): EngineJob {
  const pair = pairOf(from, source);
  const checked = validateOptions(pair, raw);
  assert.ok(checked.ok, JSON.stringify(checked));
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.pdf`), source, target: 'pdf', variant: pair.variants[0]?.key ?? null,
    options: checked.options as ConversionOptions, signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

/** Converts an SVG given as text; returns the PDF's path. */
async function drawn(svg: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): Promise<string> {
  const made = job('svg', await write(`in-${++counter}.svg`, svg), raw, extra);
  await engine.convert(made);
  return made.outputPath;
}

async function pageSize(path: string): Promise<{ width: number; height: number }> {
  const pdf = await PDFDocument.load(await readFile(path));
  assert.equal(pdf.getPageCount(), 1, 'one page');
  return pdf.getPage(0).getSize();
}

describe('svg -> pdf as vectors through Chromium', { skip }, () => {
  it('offers svg and svgz -> pdf with the pdf engine\'s kind, options and variants', () => {
    for (const source of ['svg', 'svgz']) {
      const mine = pairOf(engine, source);
      const raster = pairOf(pdfEngine, source);
      assert.equal(mine.engine, 'html');
      assert.equal(mine.kind, raster.kind);
      assert.deepEqual(mine.options, raster.options);
      assert.deepEqual(mine.variants, raster.variants);
    }
  });

  it('svg -> pdf: one page of the drawing\'s size, its text as text, no picture (the pdf engine\'s raster has one)', async () => {
    const input = await write('drawing.svg', drawingSvg());
    const made = job('svg', input);
    await engine.convert(made);
    await assertVectorPdf(made.outputPath);
    // The same drawing through the pdf engine is a picture: the check above tells them apart.
    const raster = job('svg', input, {}, {}, pdfEngine);
    await pdfEngine.convert(raster);
    assert.equal(imagesOnPage(await PDFDocument.load(await readFile(raster.outputPath)), 0), 1, 'the raster path draws one image');
  });

  it('svgz -> pdf: unpacked first, the same vectors; margin adds to every side of the page', async () => {
    const made = job('svgz', await write('drawing.svgz', gzipSync(drawingSvg())), { margin: 12 });
    await engine.convert(made);
    await assertVectorPdf(made.outputPath, 12);
  });

  it('the size: width and height in any unit; else the viewBox (its proportions with one side given); else what is drawn; else 300 x 150 px', async () => {
    const cases: [string, string, { width: number; height: number }][] = [
      ['percentages and a viewBox', 'width="100%" height="100%" viewBox="0 0 200 100"', { width: 150, height: 75 }],
      ['a viewBox alone', 'viewBox="0 0 400 200"', { width: 300, height: 150 }],
      ['a width and a viewBox', 'width="300" viewBox="0 0 600 200"', { width: 225, height: 75 }],
      ['centimetres', 'width="10cm" height="5cm"', { width: (10 / 2.54) * 72, height: (5 / 2.54) * 72 }],
      ['points', 'width="144pt" height="72pt"', { width: 144, height: 72 }],
    ];
    for (const [what, attributes, expected] of cases) {
      const path = await drawn(`<svg xmlns="http://www.w3.org/2000/svg" ${attributes}><rect width="100%" height="100%" fill="#c04040"/></svg>`);
      assertPageSize(await pageSize(path), expected, what);
    }
    const reach = await drawn('<svg xmlns="http://www.w3.org/2000/svg"><rect x="10" y="10" width="500" height="90" fill="#40c040"/></svg>');
    assertPageSize(await pageSize(reach), { width: 510 * 0.75, height: 100 * 0.75 }, 'no size, no viewBox: as far as it draws');
    const empty = await drawn('<svg xmlns="http://www.w3.org/2000/svg"></svg>');
    assertPageSize(await pageSize(empty), { width: 225, height: 112.5 }, 'nothing at all: 300 x 150 px');
    const long = await drawn('<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="50"><rect width="100%" height="100%" fill="#4040c0"/></svg>');
    assertPageSize(await pageSize(long), { width: 14_400, height: 50 * 0.75 * (14_400 / 75_000) }, 'past 200 inches: scaled down to them');
  });

  it('a4 and letter: landscape for a landscape drawing, scaled down within the margin and centred; a small one never enlarged', async () => {
    const wide = '<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="1000"><rect width="2000" height="1000" fill="#ff0000"/></svg>';
    const a4 = await drawn(wide, { margin: 20 }, { variant: 'a4' });
    assertPageSize(await pageSize(a4), { width: 841.89, height: 595.28 }, 'A4 landscape');
    // At 72 dpi a pixel is a point: 2000 x 1000 px = 1500 x 750 pt, scaled to 801.89 x 400.9 pt
    // within 20 pt margins, centred: from x 20 to 821.9, y 97.2 to 498.1.
    const pixels = await renderPage(a4);
    assert.deepEqual(pixels(421, 297), [255, 0, 0], 'the middle is the drawing');
    assert.deepEqual(pixels(30, 297), [255, 0, 0], 'the drawing reaches the left margin');
    assert.deepEqual(pixels(10, 297), [255, 255, 255], 'the margin is empty');
    assert.deepEqual(pixels(421, 80), [255, 255, 255], 'above the centred drawing is empty');
    assert.deepEqual(pixels(421, 515), [255, 255, 255], 'below it too');
    const letter = await drawn(drawingSvg(), {}, { variant: 'letter' });
    assertPageSize(await pageSize(letter), { width: 792, height: 612 }, 'Letter landscape');
    const small = await renderPage(letter);
    // 480 x 320 px = 360 x 240 pt, not enlarged: centred at (396, 306), from x 216 to 576.
    assert.notDeepEqual(small(230, 306), [255, 255, 255], 'the drawing at its own size');
    assert.deepEqual(small(200, 306), [255, 255, 255], 'not enlarged past it');
  });

  it('nothing outside the drawing loads (images, feImage, use, fonts, styles, scripts): the canary sees no connection, nothing is drawn for the refused image; its own script runs', async () => {
    const url = `http://127.0.0.1:${canary.port}`;
    const hits = canary.hits();
    const path = await drawn(drawingSvg(`
  <style>@import url("${url}/style.css"); @font-face { font-family: Far; src: url("${url}/font.woff2"); } .far { font-family: Far; }</style>
  <image href="${url}/picture.png" x="10" y="200" width="100" height="100"/>
  <image xlink:href="${url}/old.png" x="120" y="200" width="100" height="100"/>
  <use href="${url}/sprites.svg#icon"/>
  <text class="far" x="24" y="300" font-size="12">far font</text>
  <script href="${url}/script.js"/>
  <script><![CDATA[
    const mark = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    mark.setAttribute('x', '24'); mark.setAttribute('y', '90'); mark.setAttribute('font-size', '20');
    mark.textContent = 'script ran here';
    document.documentElement.appendChild(mark);
    fetch('${url}/fetch').catch(() => {});
    new Image().src = '${url}/new-image.png';
    try { new WebSocket('ws://127.0.0.1:${canary.port}/ws'); } catch {}
  ]]></script>`));
    await assertVectorPdf(path);
    const [text] = await pdfPageTexts(path);
    assert.match(text ?? '', /script ran here/, 'the drawing\'s own script ran');
    // A filter is drawn as a picture by Chromium whatever it holds (docs/formats.md): apart, so
    // that the drawing above is seen to hold none.
    await drawn(drawingSvg(`<filter id="f"><feImage href="${url}/filter.png"/></filter><rect width="10" height="10" filter="url(#f)"/>`));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(canary.hits() - hits, 0, 'no connection reached the canary');
  });

  it('a script that never ends fails timeout at the job\'s limit; the next drawing converts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new ConversionFailure('timeout', 'The conversion took longer than the limit of 3 s.')), 3000).unref();
    const started = Date.now();
    await rejectsWith(drawn(drawingSvg('<script>for (;;) {}</script>'), {}, { signal: controller.signal }), 'timeout');
    assert.ok(Date.now() - started < 15_000, `ended in ${Date.now() - started} ms`);
    await assertVectorPdf(await drawn(drawingSvg()));
  });

  it('not an SVG fails input_invalid: malformed XML, another document, an svgz that is not gzip or unpacks past the limit', async () => {
    const broken = await rejectsWith(drawn('<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>'), 'input_invalid');
    assert.match(broken.message, /not well-formed XML/);
    const html = await rejectsWith(drawn('<html xmlns="http://www.w3.org/1999/xhtml"><body>hi</body></html>'), 'input_invalid');
    assert.match(html.message, /not an SVG/);
    await rejectsWith(engine.convert(job('svgz', await write('plain.svgz', drawingSvg()))), 'input_invalid');
    const bomb = await rejectsWith(engine.convert(job('svgz', await write('bomb.svgz', gzipSync(Buffer.alloc(ZIP_LIMITS.totalBytes + 1, 0x20), { level: 1 })))), 'input_invalid');
    assert.match(bomb.message, /unpacks to more than 256 MiB/);
  });
});

describe('the registry: Chromium\'s vectors where it runs, the pdf engine\'s pixels where it does not', () => {
  /** The html and pdf engines, in the catalog's order. */
  const catalogOrder = defaultEngines({ maxInputPixels: 100_000_000 }).map((e) => e.name).filter((name) => name === 'html' || name === 'pdf');

  it('with Chromium, the catalog\'s html engine serves svg and svgz -> pdf, at the weight of kind pdf', { skip }, async () => {
    const registry = await FormatRegistry.create(defaultEngines({ maxInputPixels: 100_000_000 }).filter((e) => e.name === 'html' || e.name === 'pdf'));
    try {
      for (const source of ['svg', 'svgz']) {
        const pair = registry.pair(source, 'pdf');
        assert.equal(pair?.engine, 'html', `${source} -> pdf`);
        assert.equal(registry.creditWeight(pair!), 1, 'the weight of kind pdf, as the pdf engine\'s pair');
      }
      assert.equal(registry.pair('png', 'pdf')?.engine, 'pdf', 'other images stay with the pdf engine');
    } finally {
      await registry.close();
    }
  });

  it('without Chromium, svg and svgz -> pdf stay offered by the pdf engine, and convert', async () => {
    const missing = createHtmlEngine({ env: { PATH: join(tmpdir(), 'no-chromium-here') } });
    const engines = catalogOrder.map((name) => (name === 'html' ? missing : createPdfEngine()));
    assert.deepEqual(catalogOrder, ['html', 'pdf'], 'the html engine comes first');
    const registry = await FormatRegistry.create(engines);
    try {
      assert.equal(registry.statuses.find((s) => s.name === 'html')?.available, false);
      for (const source of ['svg', 'svgz']) assert.equal(registry.pair(source, 'pdf')?.engine, 'pdf', `${source} -> pdf`);
      const raster = registry.engine('pdf');
      assert.ok(raster);
      const made = job('svg', await write('fallback.svg', drawingSvg()), {}, {}, raster);
      await raster.convert(made);
      const pdf = await PDFDocument.load(await readFile(made.outputPath));
      assert.equal(pdf.getPageCount(), 1);
      assert.equal(imagesOnPage(pdf, 0), 1, 'the raster path: one picture');
    } finally {
      await registry.close();
    }
  });
});

/** Page 1 of a PDF drawn by PDFium at 72 dpi (a pixel a point): the RGB of a pixel. */
async function renderPage(path: string): Promise<(x: number, y: number) => number[]> {
  const pages = createPdfPagesEngine();
  await pages.probe();
  const pair = pairOf(pages, 'pdf', 'png');
  const checked = validateOptions(pair, { dpi: 72 });
  assert.ok(checked.ok);
  const outputPath = join(dir, `page-${++counter}.png`);
  await pages.convert({
    inputPath: path, outputPath, source: 'pdf', target: 'png', variant: null, options: checked.options as ConversionOptions,
    signal: new AbortController().signal, onProgress: () => undefined,
  });
  const { data, info } = await sharp(outputPath).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return (x, y) => {
    const at = (Math.round(y) * info.width + Math.round(x)) * info.channels;
    return [data[at]!, data[at + 1]!, data[at + 2]!];
  };
}
