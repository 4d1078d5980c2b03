import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { PDFDict, PDFDocument, PDFName } from 'pdf-lib';
import sharp from 'sharp';
import { ConversionFailure, HandOver } from '../../src/errors/api-error.ts';
import { createPdfEngine } from '../../src/engines/pdf/pdf-engine.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';

const engine = createPdfEngine();
const status = await engine.probe();
const pairs = engine.pairs();

const IMAGE_WIDTH = 120;
const IMAGE_HEIGHT = 80;
const TIFF_PAGES = 3;
const A4: [number, number] = [595.28, 841.89];
const LETTER: [number, number] = [612, 792];

let dir: string;
let counter = 0;
const proven = new Set<string>();
const fixtures = new Map<string, string>();

function frame(red: number, alpha = 1) {
  return sharp({ create: { width: IMAGE_WIDTH, height: IMAGE_HEIGHT, channels: 4, background: { r: red, g: 120, b: 60, alpha } } });
}

/** Text whose layout is known: 57 short lines with Greek, Cyrillic and accents, then one of 500 characters. */
const TEXT = [
  ...Array.from({ length: 57 }, (_, i) => `${i + 1}\tÜber Ωμέγα — Привет, мир € ½ “quotes”`),
  'word '.repeat(100).trim(),
].join('\n') + '\n';

function defaults(pair: ConversionPair | undefined): ConversionOptions {
  const options: ConversionOptions = {};
  for (const d of pair?.options ?? []) if (d.default !== null) options[d.name] = d.default;
  return options;
}

function job(source: string, inputPath: string, extra: Partial<EngineJob> = {}, options: ConversionOptions = {}): EngineJob {
  const pair = pairs.find((p) => p.source === source);
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.pdf`), source, target: 'pdf',
    variant: pair?.variants[0]?.key ?? null, options: { ...defaults(pair), ...options },
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

async function load(path: string): Promise<PDFDocument> {
  return PDFDocument.load(await readFile(path), { updateMetadata: false });
}

function pageSizes(doc: PDFDocument): [number, number][] {
  return doc.getPages().map((page) => {
    const { width, height } = page.getSize();
    return [Number(width.toFixed(2)), Number(height.toFixed(2))];
  });
}

async function fails(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  let caught: unknown;
  await promise.catch((error: unknown) => (caught = error));
  assert.ok(caught instanceof ConversionFailure, `expected ConversionFailure, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (pattern) assert.match(caught.message, pattern);
}

async function write(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-pdf-'));
  const rgb = frame(200).removeAlpha();
  fixtures.set('jpg', await write('in.jpg', await rgb.clone().jpeg().toBuffer()));
  fixtures.set('png', await write('in.png', await frame(30, 0.5).png().toBuffer()));
  fixtures.set('webp', await write('in.webp', await rgb.clone().webp().toBuffer()));
  fixtures.set('gif', await write('in.gif', await rgb.clone().gif().toBuffer()));
  fixtures.set('avif', await write('in.avif', await rgb.clone().avif().toBuffer()));
  const pages = await Promise.all([10, 120, 240].map((red) => frame(red).removeAlpha().png().toBuffer()));
  fixtures.set('tiff', await write('in.tiff', await sharp(pages, { join: { animated: true } }).tiff().toBuffer()));
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${IMAGE_WIDTH}" height="${IMAGE_HEIGHT}"><rect width="100%" height="100%" fill="#2060a0"/><circle cx="60" cy="40" r="30" fill="#f0c020"/></svg>`;
  fixtures.set('svg', await write('in.svg', svg));
  fixtures.set('svgz', await write('in.svgz', gzipSync(svg)));
  fixtures.set('txt', await write('in.txt', TEXT));
});

after(async () => {
  console.log(`pdf engine: ${proven.size} of ${pairs.length} pairs proven`);
  await rm(dir, { recursive: true, force: true });
});

describe('pdf engine', () => {
  it('offers images and txt -> pdf with their variants (pdf -> pdf is the pdfops engine\'s)', () => {
    assert.ok(status.available, status.detail);
    for (const source of ['jpg', 'png', 'webp', 'gif', 'tiff', 'avif', 'svg', 'svgz', 'txt']) {
      assert.ok(pairs.some((p) => p.source === source && p.target === 'pdf'), `${source} -> pdf`);
    }
    assert.ok(!pairs.some((p) => p.source === 'pdf'));
    assert.deepEqual(pairs.find((p) => p.source === 'png')?.variants.map((v) => v.key), ['fit', 'a4', 'letter']);
    for (const pair of pairs) assert.equal(pair.kind, 'pdf');
  });
});

describe('every pdf pair converts, checked with pdf-lib', () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const input = fixtures.get(pair.source);
      assert.ok(input, `no fixture for ${pair.source}: add one`);
      const progress: number[] = [];
      const j = job(pair.source, input, { onProgress: (p) => progress.push(p) });
      await engine.convert(j);
      const doc = await load(j.outputPath);
      if (pair.source === 'txt') {
        // 57 lines + a 500-character line wrapped to 7 lines = 64 lines; A4 with the defaults holds 58.
        assert.deepEqual(pageSizes(doc), [A4, A4]);
      } else {
        const count = pair.source === 'tiff' ? TIFF_PAGES : 1;
        // Variant `fit`: the page is the image at 72 dpi.
        assert.deepEqual(pageSizes(doc), Array.from({ length: count }, () => [IMAGE_WIDTH, IMAGE_HEIGHT]));
      }
      assert.equal(progress.at(-1), 100);
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

describe('images -> pdf: page size variants and margin', () => {
  it('a4 and letter pages, landscape for a landscape image, image scaled down to fit', async () => {
    const wide = await write('wide.png', await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#336699' } }).png().toBuffer());
    const a4 = job('png', wide, { variant: 'a4' }, { margin: 20 });
    const tall = await write('tall.png', await sharp({ create: { width: 80, height: 120, channels: 3, background: '#993366' } }).png().toBuffer());
    const letter = job('png', tall, { variant: 'letter' });
    await engine.convert(a4);
    await engine.convert(letter);
    const a4Doc = await load(a4.outputPath);
    assert.deepEqual(pageSizes(a4Doc), [[A4[1], A4[0]]]);
    assert.deepEqual(pageSizes(await load(letter.outputPath)), [LETTER]);
  });

  it('margin grows a fitted page on every side', async () => {
    const j = job('webp', fixtures.get('webp')!, {}, { margin: 10 });
    await engine.convert(j);
    assert.deepEqual(pageSizes(await load(j.outputPath)), [[IMAGE_WIDTH + 20, IMAGE_HEIGHT + 20]]);
  });

  it('the image resolution sets the physical size: 144 dpi is half the points', async () => {
    const hiDpi = await write('hidpi.jpg', await frame(90).removeAlpha().jpeg().withMetadata({ density: 144 }).toBuffer());
    const j = job('jpg', hiDpi);
    await engine.convert(j);
    assert.deepEqual(pageSizes(await load(j.outputPath)), [[IMAGE_WIDTH / 2, IMAGE_HEIGHT / 2]]);
  });

  it('an EXIF-rotated JPEG is placed upright', async () => {
    // Orientation 6: stored landscape, shown portrait.
    const rotated = await write('rotated.jpg', await frame(90).removeAlpha().jpeg().withMetadata({ orientation: 6 }).toBuffer());
    const j = job('jpg', rotated);
    await engine.convert(j);
    assert.deepEqual(pageSizes(await load(j.outputPath)), [[IMAGE_HEIGHT, IMAGE_WIDTH]]);
  });

  it('a truncated PNG or JPEG and a text file named .jpg are input_invalid', async () => {
    const png = await readFile(fixtures.get('png')!);
    await fails(engine.convert(job('png', await write('cut.png', png.subarray(0, png.length >> 1)))), 'input_invalid');
    const big = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg().toBuffer();
    await fails(engine.convert(job('jpg', await write('cut.jpg', big.subarray(0, big.length >> 1)))), 'input_invalid');
    await fails(engine.convert(job('jpg', await write('text.jpg', 'not an image at all'))), 'input_invalid');
  });
});

describe('txt -> pdf', () => {
  it('embeds the shipped font (subset) so Unicode text is real text', async () => {
    const j = job('txt', fixtures.get('txt')!);
    await engine.convert(j);
    const doc = await load(j.outputPath);
    const fontFiles = doc.context.enumerateIndirectObjects().filter(([, object]) => object instanceof PDFDict && object.has(PDFName.of('FontFile2')));
    assert.equal(fontFiles.length, 1, 'one embedded TrueType font');
    assert.ok((await stat(j.outputPath)).size < 60_000, 'subset, not the whole 340 kB font');
  });

  it('letter variant, font size and form feeds', async () => {
    const j = job('txt', await write('ff.txt', 'first page\fsecond page\n\fthird page\n'), { variant: 'letter' }, { font_size: 14 });
    await engine.convert(j);
    assert.deepEqual(pageSizes(await load(j.outputPath)), [LETTER, LETTER, LETTER]);
  });

  it('text that is not UTF-8 is read as Windows-1252 (an older README in Latin-1, with Windows\' quotes); one with NUL bytes is no text', async () => {
    // "Café “zwei” – Straße": é, ß in Latin-1; the quotes and the dash in Windows-1252's 0x80-0x9f.
    const latin = Buffer.from([...Buffer.from('Caf'), 0xe9, 0x20, 0x93, ...Buffer.from('zwei'), 0x94, 0x20, 0x96, ...Buffer.from(' Stra'), 0xdf, 0x65, 0x0a]);
    const j = job('txt', await write('latin1.txt', latin));
    await engine.convert(j);
    assert.match((await pdfPageTexts(j.outputPath)).join('\n'), /Café “zwei” – Straße/);
    const binary = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0xff, 0xfe, 0x00]);
    await assert.rejects(engine.convert(job('txt', await write('binary.txt', binary))), (error: unknown) =>
      error instanceof ConversionFailure && error.code === 'input_invalid' && /is not text: it is not UTF-8 and has NUL bytes/.test(error.message));
  });

  it('an empty file is one blank page', async () => {
    const j = job('txt', await write('empty.txt', ''));
    await engine.convert(j);
    assert.equal((await load(j.outputPath)).getPageCount(), 1);
  });

  it('text outside the font, or written right to left, is handed over (to Chromium) with a clear message, never garbled output', async () => {
    const handedOver = async (promise: Promise<unknown>, pattern: RegExp) => {
      const caught = await promise.then(() => undefined, (error: unknown) => error);
      assert.ok(caught instanceof HandOver, `expected HandOver, got ${String(caught)}`);
      assert.match(caught.message, pattern);
    };
    await handedOver(engine.convert(job('txt', await write('cjk.txt', 'fine\nthen 漢字\n'))), /Line 2, column 6: "漢" \(U\+6F22\) is not in DejaVu Sans Mono/);
    await handedOver(engine.convert(job('txt', await write('hebrew.txt', 'שלום\n'))), /right-to-left/);
  });

  it('binary data is input_invalid with the line', async () => {
    await fails(engine.convert(job('txt', await write('nul.txt', 'a\nb\u0000c\n'))), 'input_invalid', /Line 2 contains the control character U\+0000/);
  });
});
