/**
 * The pdfpages engine (PDFium as WebAssembly): PDF pages -> png, jpg, webp and PDF -> txt, on
 * PDFs made here with pdf-lib (marked pages with a coloured band each, an embedded image, a
 * rotated page, 10,000 pages), every output decoded (sharp for images, the text read back);
 * options; the input failures (not a PDF, cut short, encrypted, page past the end, too many
 * pixels); that page 1 of a 10,000-page PDF reads only what it needs (measured); that PDFium
 * loads once per process, and again after a trap; and conversions through the engine host.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { degrees, PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { zipEntries } from '../helpers/zip-read.ts';
import { ConversionFailure, HandOver } from '../../src/errors/api-error.ts';
import { handedOver } from '../../src/engines/hand-over.ts';
import { EngineHost } from '../../src/engines/host/engine-host.ts';
import { runQpdf } from '../../src/engines/pdfops/qpdf.ts';
import { manyPagesPdf } from '../helpers/hostile-files.ts';
import { createPdfPagesEngine } from '../../src/engines/pdfpages/pdfpages-engine.ts';
import { loadPdfium, type ReadStats } from '../../src/engines/pdfpages/pdfium.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';

const engine = createPdfPagesEngine();
const status = await engine.probe();
const pairs = engine.pairs();

/** US Letter in points; at the default 150 dpi 1275 x 1650 pixels. */
const LETTER: [number, number] = [612, 792];
const AT_150_DPI = { width: 1275, height: 1650 };
/** The band across the top of each page of the marked PDF: which page rendered shows in its colour. */
const BANDS: [number, number, number][] = [[220, 40, 40], [40, 160, 60], [40, 80, 220]];
const BIG_PAGES = 10_000;

let dir: string;
let counter = 0;
const proven = new Set<string>();
const files: Record<'pages' | 'image' | 'photo' | 'rotated' | 'big' | 'encrypted' | 'ownerOnly' | 'notPdf' | 'pngNamedPdf' | 'truncated' | 'noTrailer', string> = {
  pages: '', image: '', photo: '', rotated: '', big: '', encrypted: '', ownerOnly: '', notPdf: '', pngNamedPdf: '', truncated: '', noTrailer: '',
};

async function write(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** Three Letter pages, each with its marker text (and non-ASCII text) and its coloured band. */
async function markedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  BANDS.forEach(([r, g, b], index) => {
    const page = doc.addPage(LETTER);
    page.drawRectangle({ x: 0, y: LETTER[1] - 50, width: LETTER[0], height: 50, color: rgb(r / 255, g / 255, b / 255) });
    page.drawText(`PAGE-${index + 1}-MARKER`, { x: 50, y: 700, size: 24, font });
    page.drawText('Ünïcödé café', { x: 50, y: 660, size: 14, font });
  });
  return doc.save();
}

/** One page with a magenta PNG placed at (100, 100) to (300, 300) points. */
async function imagePdf(): Promise<Uint8Array> {
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 200, g: 30, b: 200 } } }).png().toBuffer();
  const doc = await PDFDocument.create();
  const image = await doc.embedPng(png);
  doc.addPage(LETTER).drawImage(image, { x: 100, y: 100, width: 200, height: 200 });
  return doc.save();
}

/** A page filled with a noisy photo-like image: detail that lossy encoders keep more or less of. */
async function photoPdf(): Promise<Uint8Array> {
  const png = await sharp({ create: { width: 200, height: 150, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 50 } } }).png().toBuffer();
  const doc = await PDFDocument.create();
  doc.addPage([400, 300]).drawImage(await doc.embedPng(png), { x: 0, y: 0, width: 400, height: 300 });
  return doc.save();
}

async function rotatedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.addPage(LETTER).setRotation(degrees(90));
  return doc.save();
}

function defaults(pair: ConversionPair): ConversionOptions {
  const options: ConversionOptions = {};
  for (const d of pair.options) if (d.default !== null) options[d.name] = d.default;
  return options;
}

function pairTo(target: string): ConversionPair {
  const pair = pairs.find((p) => p.target === target);
  assert.ok(pair, `pdf -> ${target} is offered`);
  return pair;
}

function job(target: string, inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source: 'pdf', target, variant: null,
    options: { ...defaults(pairTo(target)), ...options }, signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

async function converted(target: string, inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): Promise<string> {
  const j = job(target, inputPath, options, extra);
  await engine.convert(j);
  return j.outputPath;
}

async function fails(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<ConversionFailure> {
  let caught: unknown;
  await promise.catch((error: unknown) => (caught = error));
  assert.ok(caught instanceof ConversionFailure, `expected ConversionFailure(${code}), got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (pattern) assert.match(caught.message, pattern);
  return caught;
}

const SHARP_FORMAT: Record<string, string> = { png: 'png', jpg: 'jpeg', webp: 'webp' };

async function assertImage(path: string, target: string, width: number, height: number): Promise<void> {
  const meta = await sharp(path).metadata();
  assert.equal(meta.format, SHARP_FORMAT[target], `decodes as ${target}`);
  assert.deepEqual([meta.width, meta.height], [width, height], 'pixel size');
}

/** The colour at (x, y) of a decoded image, and whether it is within `tolerance` of `expected`. */
async function assertColour(path: string, x: number, y: number, expected: [number, number, number], tolerance = 24): Promise<void> {
  const { data, info } = await sharp(path).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const offset = (y * info.width + x) * info.channels;
  const actual = [data[offset]!, data[offset + 1]!, data[offset + 2]!];
  assert.ok(actual.every((value, i) => Math.abs(value - expected[i]!) <= tolerance), `pixel (${x}, ${y}) is ${actual.join(',')}, expected about ${expected.join(',')}`);
}

/** The markers of a text output's pages, in order. */
function markers(text: string): string[] {
  return text.split('\f').map((page) => /PAGE-\d*-?MARKER/.exec(page)?.[0] ?? '');
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-pdfpages-'));
  files.pages = await write('pages.pdf', await markedPdf());
  files.image = await write('image.pdf', await imagePdf());
  files.photo = await write('photo.pdf', await photoPdf());
  files.rotated = await write('rotated.pdf', await rotatedPdf());
  files.big = await write('big.pdf', await manyPagesPdf(BIG_PAGES, { page: BIG_PAGES - 1, rgb: BANDS[0]! }));
  const pages = await readFile(files.pages);
  files.truncated = await write('truncated.pdf', pages.subarray(0, pages.length >> 1));
  // Everything but the last 60 bytes: the cross-reference stream's end, startxref and %%EOF.
  files.noTrailer = await write('no-trailer.pdf', pages.subarray(0, pages.length - 60));
  files.notPdf = await write('not.pdf', 'Dear reader,\nthis is a letter, not a PDF.\n');
  files.pngNamedPdf = await write('png.pdf', await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).png().toBuffer());
  // qpdf (WebAssembly, the pdf engine's) encrypts: AES-256 with a user password, and with an owner password only.
  files.encrypted = join(dir, 'encrypted.pdf');
  files.ownerOnly = join(dir, 'owner-only.pdf');
  for (const [user, output] of [['secret', files.encrypted], ['', files.ownerOnly]] as const) {
    const result = await runQpdf(['--encrypt', user, 'owner-password', '256', '--'], files.pages, output, new AbortController().signal);
    assert.equal(result.code, 0, result.messages.join('\n'));
  }
});

after(async () => {
  console.log(`pdfpages engine: ${proven.size} of ${pairs.length} pairs proven`);
  await rm(dir, { recursive: true, force: true });
});

describe('pdfpages engine', () => {
  it('is available without loading PDFium, and offers pdf -> png, jpg, webp, txt of kind document', () => {
    assert.ok(status.available, status.detail);
    assert.match(status.version ?? '', /^\d+\.\d+\.\d+/);
    assert.deepEqual(pairs.map((p) => p.target).sort(), ['jpg', 'png', 'txt', 'webp']);
    for (const pair of pairs) {
      assert.equal(pair.source, 'pdf');
      assert.equal(pair.kind, 'document');
      assert.deepEqual(pair.variants, []);
    }
    assert.deepEqual(pairTo('png').options.map((o) => o.name), ['page', 'pages', 'dpi', 'width']);
    assert.deepEqual(pairTo('jpg').options.map((o) => o.name), ['page', 'pages', 'dpi', 'width', 'quality']);
    assert.deepEqual(pairTo('webp').options.map((o) => o.name), ['page', 'pages', 'dpi', 'width', 'quality']);
    assert.deepEqual(pairTo('txt').options, []);
  });
});

describe('every pdfpages pair converts, checked by decoding the output', () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const progress: number[] = [];
      if (pair.target === 'txt') {
        const output = await converted(pair.target, files.pages, {}, { onProgress: (p) => progress.push(p) });
        const text = await readFile(output, 'utf8');
        assert.deepEqual(markers(text), ['PAGE-1-MARKER', 'PAGE-2-MARKER', 'PAGE-3-MARKER'], 'each page, in order, separated by a form feed');
        assert.match(text, /Ünïcödé café/, 'UTF-8');
        assert.ok(text.endsWith('\n'));
        assert.doesNotMatch(text, /\r/, 'LF line ends');
      } else if (SHARP_FORMAT[pair.target]) {
        // Page 2 at the default 150 dpi: its green band across the top.
        const output = await converted(pair.target, files.pages, { page: 2 }, { onProgress: (p) => progress.push(p) });
        await assertImage(output, pair.target, AT_150_DPI.width, AT_150_DPI.height);
        await assertColour(output, 600, 40, BANDS[1]!);
        await assertColour(output, 600, 1000, [255, 255, 255]);
      } else {
        assert.fail(`no expectation for pdf -> ${pair.target}: add one`);
      }
      assert.equal(progress.at(-1), 100);
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

describe('rendering', () => {
  it('dpi sets the size (Letter at 72 dpi is 612 x 792 pixels, at 36 dpi 306 x 396)', async () => {
    await assertImage(await converted('png', files.pages, { dpi: 72 }), 'png', 612, 792);
    await assertImage(await converted('webp', files.pages, { dpi: 36 }), 'webp', 306, 396);
  });

  it('width wins over dpi, the height follows the page\'s aspect', async () => {
    const output = await converted('jpg', files.pages, { width: 600, dpi: 300, page: 3 });
    await assertImage(output, 'jpg', 600, 776);
    await assertColour(output, 300, 10, BANDS[2]!, 32);
  });

  it('an embedded image is drawn where it was placed', async () => {
    const output = await converted('png', files.image, { dpi: 72 });
    await assertImage(output, 'png', 612, 792);
    await assertColour(output, 200, 592, [200, 30, 200]);
    await assertColour(output, 50, 50, [255, 255, 255]);
  });

  it('pages: every page (or a list) as a zip of images in the order asked, each its own band; one page is the image itself', async () => {
    for (const target of ['png', 'jpg', 'webp']) {
      const j = job(target, files.pages, { pages: 'all', dpi: 36 });
      const output = await engine.convert(j);
      assert.equal(output?.archive, true);
      const entries = await zipEntries(await readFile(j.outputPath));
      assert.deepEqual(entries.map((e) => e.name), [1, 2, 3].map((n) => `page-${n}.${target}`));
      for (const [index, entry] of entries.entries()) {
        const path = await write(`all-${target}-${index}.${target}`, entry.bytes);
        await assertImage(path, target, 306, 396);
        await assertColour(path, 150, 10, BANDS[index]!, 40);
      }
    }
    const listed = job('png', files.pages, { pages: '3,1', dpi: 36 });
    await engine.convert(listed);
    const entries = await zipEntries(await readFile(listed.outputPath));
    assert.deepEqual(entries.map((e) => e.name), ['page-3.png', 'page-1.png']);
    await assertColour(await write('listed-0.png', entries[0]!.bytes), 150, 10, BANDS[2]!, 40);
    const one = job('png', files.pages, { pages: '2', dpi: 36 });
    assert.equal((await engine.convert(one))?.archive, undefined);
    await assertColour(one.outputPath, 150, 10, BANDS[1]!, 40);
    await fails(engine.convert(job('png', files.pages, { pages: '2-4' })), 'input_invalid', /has 3 pages; page 4 does not exist/);
    // The plan's max_pages: three pages asked for where two may be rendered.
    await fails(engine.convert(job('png', files.pages, { pages: 'all' }, { maxPages: 2 })), 'input_invalid', /3 pages asked for; at most 2 are rendered in one conversion on this plan/);
  });

  it('a page turned by /Rotate 90 renders landscape', async () => {
    await assertImage(await converted('png', files.rotated), 'png', 1650, 1275);
  });

  for (const target of ['jpg', 'webp']) {
    it(`quality: ${target} at 10 is smaller than at 95`, async () => {
      const low = await stat(await converted(target, files.photo, { quality: 10, dpi: 72 }));
      const high = await stat(await converted(target, files.photo, { quality: 95, dpi: 72 }));
      assert.ok(low.size < high.size * 0.7, `${low.size} bytes at 10 vs ${high.size} at 95`);
    });
  }

  it('the descriptors refuse page 0, page 1.5, dpi outside 36..600, width 0 or over 16384, and quality for png', () => {
    for (const raw of [{ page: 0 }, { page: 1.5 }, { page: 'two' }, { dpi: 35 }, { dpi: 601 }, { width: 0 }, { width: 16385 }, { quality: 0 }]) {
      assert.equal(validateOptions(pairTo('jpg'), raw).ok, false, JSON.stringify(raw));
    }
    assert.equal(validateOptions(pairTo('png'), { quality: 50 }).ok, false, 'png has no quality');
    assert.equal(validateOptions(pairTo('txt'), { page: 1 }).ok, false, 'txt is every page');
    assert.deepEqual(validateOptions(pairTo('webp'), {}), { ok: true, options: { page: 1, dpi: 150, quality: 80 } });
  });
});

describe('text', () => {
  it('a hyphen that ends a line stays a hyphen and a line break (PDFium gives U+FFFE for both)', async () => {
    const doc = await PDFDocument.create();
    const page = doc.addPage([400, 300]);
    const font = await doc.embedFont(StandardFonts.Helvetica);
    ['The rules for manip-', 'ulation are well-', 'known. A dash - here.'].forEach((line, i) => page.drawText(line, { x: 20, y: 250 - 15 * i, size: 12, font }));
    const text = await readFile(await converted('txt', await write('hyphens.pdf', await doc.save())), 'utf8');
    assert.equal(text, 'The rules for manip-\nulation are well-\nknown. A dash - here.\n');
  });

  it('ends each page\'s last line with a newline before the form feed, as pdftotext does; an empty page is only its form feed', async () => {
    /** A PDF of these pages' lines -> txt. */
    const textOf = async (name: string, pages: string[][]): Promise<string> => {
      const doc = await PDFDocument.create();
      const font = await doc.embedFont(StandardFonts.Helvetica);
      for (const lines of pages) {
        const page = doc.addPage([400, 300]);
        lines.forEach((line, i) => page.drawText(line, { x: 20, y: 250 - 15 * i, size: 12, font }));
      }
      return readFile(await converted('txt', await write(name, await doc.save())), 'utf8');
    };
    assert.equal(await textOf('three-pages.pdf', [['Chapter one', 'ends here', '1'], [], ['Chapter two', '3']]), 'Chapter one\nends here\n1\n\f\fChapter two\n3\n');
    assert.equal(await textOf('empty-last.pdf', [['Only page with words'], []]), 'Only page with words\n\f\n');
  });
});

describe('a 10,000-page PDF', () => {
  it('page 9,999 renders (its red band), page 10,001 fails input_invalid naming the page count', async () => {
    const output = await converted('png', files.big, { page: 9_999, dpi: 36 });
    await assertImage(output, 'png', 306, 396);
    await assertColour(output, 150, 5, BANDS[0]!);
    const first = await converted('png', files.big, { dpi: 36 });
    await assertColour(first, 150, 5, [255, 255, 255]);
    await fails(engine.convert(job('png', files.big, { page: 10_001 })), 'input_invalid', /^The PDF has 10,000 pages; page 10,001 does not exist\.$/);
    await fails(engine.convert(job('png', files.pages, { page: 4 })), 'input_invalid', /The PDF has 3 pages; page 4 does not exist/);
  });

  it('page 1 reads a fraction of the file and takes a fraction of page 9,999\'s time: the other pages are not parsed (measured)', async () => {
    const pdfium = await loadPdfium();
    const size = (await stat(files.big)).size;
    const measure = (index: number): Promise<ReadStats & { ms: number }> => pdfium.exclusive(async () => {
      const started = performance.now();
      const document = pdfium.open(files.big);
      try {
        const page = document.page(index);
        page.render(306, 396).free();
        page.close();
        return { ...document.stats(), ms: performance.now() - started };
      } finally {
        document.close();
      }
    });
    const best = async (index: number) => {
      const runs = [await measure(index), await measure(index), await measure(index)];
      return runs.reduce((a, b) => (b.ms < a.ms ? b : a));
    };
    const first = await best(0);
    const late = await best(BIG_PAGES - 2);
    console.log(
      `10,000-page PDF of ${size} bytes: page 1 read ${first.bytes} bytes in ${first.reads} reads, ${first.ms.toFixed(1)} ms; ` +
      `page 9,999 read ${late.bytes} bytes in ${late.reads} reads, ${late.ms.toFixed(1)} ms`,
    );
    // Page 1 needs the cross-reference table (20 bytes per object) and its own objects only;
    // page 9,999 is found by walking the page dictionaries before it.
    assert.ok(first.bytes < size / 3, `page 1 read ${first.bytes} of ${size} bytes`);
    assert.ok(late.bytes > size * 0.9, `page 9,999 read ${late.bytes} of ${size} bytes`);
    assert.ok(first.reads * 5 < late.reads, `${first.reads} reads vs ${late.reads}`);
    assert.ok(first.ms < late.ms / 2, `${first.ms.toFixed(1)} ms vs ${late.ms.toFixed(1)} ms`);
  });

  it('txt has all 10,000 pages in order, separated by form feeds', async () => {
    const text = await readFile(await converted('txt', files.big), 'utf8');
    const found = markers(text);
    assert.equal(found.length, BIG_PAGES);
    assert.deepEqual([found[0], found[1], found[9_997], found[9_998], found[9_999]], ['PAGE-1-MARKER', 'PAGE-MARKER', 'PAGE-MARKER', 'PAGE-9999-MARKER', 'PAGE-10000-MARKER']);
  });

  it('PDFium is loaded once per process: every conversion uses the same instance', async () => {
    const before = await loadPdfium();
    await converted('png', files.pages, { dpi: 36 });
    await converted('txt', files.pages);
    assert.equal(await loadPdfium(), before);
  });
});

describe('failures', () => {
  it('a text file and a PNG named .pdf are input_invalid: not a PDF', async () => {
    await fails(engine.convert(job('png', files.notPdf)), 'input_invalid', /not a PDF/);
    await fails(engine.convert(job('txt', files.pngNamedPdf)), 'input_invalid', /not a PDF/);
  });

  it('a PDF cut in half, and one missing its trailer, are input_invalid: damaged', async () => {
    await fails(engine.convert(job('png', files.truncated)), 'input_invalid', /damaged/);
    await fails(engine.convert(job('txt', files.truncated)), 'input_invalid', /damaged/);
    await fails(engine.convert(job('jpg', files.noTrailer)), 'input_invalid', /damaged/);
  });

  it('a PDF encrypted with a password is input_invalid; one with an owner password only renders', async () => {
    await fails(engine.convert(job('png', files.encrypted)), 'input_invalid', /encrypted with a password/);
    await fails(engine.convert(job('txt', files.encrypted)), 'input_invalid', /encrypted with a password/);
    const output = await converted('png', files.ownerOnly, { page: 3, dpi: 36 });
    await assertColour(output, 150, 5, BANDS[2]!);
    assert.deepEqual(markers(await readFile(await converted('txt', files.ownerOnly), 'utf8')), ['PAGE-1-MARKER', 'PAGE-2-MARKER', 'PAGE-3-MARKER']);
  });

  it('a render over the pixel limit is refused before rendering, naming the limit', async () => {
    const limited = createPdfPagesEngine({ maxInputPixels: 1_000_000 });
    const refused = job('png', files.pages); // 1275 x 1650 = 2,103,750 pixels
    await fails(limited.convert(refused), 'input_invalid', /1,275 x 1,650 = 2,103,750 pixels, over the limit of 1,000,000 pixels/);
    assert.equal(existsSync(refused.outputPath), false);
    const atLimit = createPdfPagesEngine({ maxInputPixels: 1275 * 1650 });
    const passes = job('png', files.pages, { dpi: 150 });
    await atLimit.convert(passes);
    await assertImage(passes.outputPath, 'png', 1275, 1650);
    await fails(engine.convert(job('png', files.pages, { width: 16384 })), 'input_invalid', /over the limit of 100,000,000 pixels/);
    // Under a higher pixel limit, WebP's own limit of 16,383 pixels a side still holds.
    const generous = createPdfPagesEngine({ maxInputPixels: 400_000_000 });
    await fails(generous.convert(job('webp', files.pages, { width: 16384 })), 'input_invalid', /WEBP images have at most 16,383 pixels a side/);
  });

  it('txt stops at the output cap and leaves no file', async () => {
    const capped = job('txt', files.big, {}, { maxOutputBytes: 4096 });
    await fails(engine.convert(capped), 'conversion_failed', /larger than its limit/);
    assert.equal(existsSync(capped.outputPath), false);
  });

  it('a cancelled job does not start', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    await assert.rejects(engine.convert(job('png', files.pages, {}, { signal: controller.signal })), /cancelled/);
  });
});

describe('a PDFium trap', () => {
  it('fails that conversion with conversion_failed, and the next one loads a fresh PDFium', async () => {
    const pdfium = await loadPdfium();
    const trap = Object.assign(new Error('unreachable executed'), { name: 'RuntimeError' });
    await fails(pdfium.exclusive(() => Promise.reject(trap)), 'conversion_failed', /PDFium failed on this file: unreachable executed/);
    const fresh = await loadPdfium();
    assert.notEqual(fresh, pdfium);
    await assertImage(await converted('png', files.pages, { dpi: 36 }), 'png', 306, 396);
    assert.equal(await loadPdfium(), fresh);
  });
});

describe('a PDF whose pages hold no text (a scan)', () => {
  it('txt hands the file over to OCR, keeping the empty text it wrote for where no OCR is installed', async () => {
    const scan = job('txt', files.image);
    const handed = await engine.convert(scan).then(() => undefined, (error: unknown) => error);
    assert.ok(handed instanceof HandOver, String(handed));
    assert.match(handed.message, /no text layer: none of its 1 page holds text/);
    assert.deepEqual(handed.kept, { size: (await stat(scan.outputPath)).size });
    assert.equal((await readFile(scan.outputPath, 'utf8')).trim(), '');
    // No fallback in the registry: the kept text stands; with one, the file goes there.
    assert.deepEqual(handedOver(handed, pairTo('txt'), () => undefined), { kept: handed.kept });
    const ocrPair: ConversionPair = { source: 'pdf', target: 'txt', engine: 'ocr', kind: 'ocr', options: [], variants: [] };
    const ocrEngine = { ...engine, name: 'ocr' };
    assert.equal((handedOver(handed, { ...pairTo('txt'), fallback: ocrPair }, (name) => (name === 'ocr' ? ocrEngine : undefined)) as { engine: unknown }).engine, ocrEngine);
    // A PDF with text is read as it is.
    assert.match(await readFile(await converted('txt', files.pages), 'utf8'), /PAGE-1-MARKER/);
  });

  it('the hand-over and what it kept cross the engine host', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 1024 });
    try {
      const scan = job('txt', files.image);
      const handed = await host.convert('pdfpages', { maxInputPixels: 100_000_000 }, scan).then(() => undefined, (error: unknown) => error);
      assert.ok(handed instanceof HandOver, String(handed));
      assert.deepEqual(handed.kept, { size: (await stat(scan.outputPath)).size });
    } finally {
      await host.close();
    }
  });
});

describe('through the engine host', () => {
  it('renders and extracts in a host process; a failure crosses with its code and message', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 1024 });
    try {
      const settings = { maxInputPixels: 100_000_000 };
      const image = job('webp', files.pages, { page: 3 });
      await host.convert('pdfpages', settings, image);
      await assertImage(image.outputPath, 'webp', AT_150_DPI.width, AT_150_DPI.height);
      await assertColour(image.outputPath, 600, 40, BANDS[2]!);
      const text = job('txt', files.pages);
      await host.convert('pdfpages', settings, text);
      assert.deepEqual(markers(await readFile(text.outputPath, 'utf8')), ['PAGE-1-MARKER', 'PAGE-2-MARKER', 'PAGE-3-MARKER']);
      await fails(host.convert('pdfpages', settings, job('png', files.big, { page: 10_001 })), 'input_invalid', /10,000 pages; page 10,001/);
    } finally {
      await host.close();
    }
  });
});
