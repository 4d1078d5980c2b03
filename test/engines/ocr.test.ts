/**
 * The OCR engine (OCRmyPDF 14 and Tesseract 5): one generated test per pair on page images the
 * suite renders itself (ordinary English paragraphs in DejaVu Serif and Sans at 300 dpi, an A4
 * page 2480 x 3508 pixels), as images and as image-only PDFs made with pdf-lib. It proves:
 * - accuracy: -> txt and the -> pdf text layer (read back with Poppler's pdftotext) find at
 *   least 98 % of the words of every page, 95 % of a page scanned 2 degrees askew with noise,
 *   and German umlauts and ß with `language: deu`;
 * - -> pdf keeps the pages: as many as the source, each page image of the same pixel size
 *   (`pdfimages -list`), and a page that already has text is left as it is (ocr_mode skip);
 * - -> txt has a form feed between pages (a multi-page TIFF's and a PDF's) and one newline at the end;
 * - what is refused before any work: a decompression bomb, an image over max_input_pixels, a
 *   file over the plan's pages (no OCR program is started: a wrapper logs every run);
 * - a corrupt PDF fails in words, an aborted job leaves no process behind, and progress rises
 *   from 0 to 100.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { crc32, deflateSync } from 'node:zlib';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { createOcrEngine } from '../../src/engines/ocr/ocr-engine.ts';
import { liveChildPids } from '../../src/engines/subprocess.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { rejectsWith } from '../helpers/failure.ts';
import { describeRecall, ENGLISH_HARBOUR, ENGLISH_LIBRARY, GERMAN_TRAMS, wordRecall, wordsOf } from '../helpers/ocr-words.ts';
import { seededRandom } from '../helpers/seeded-random.ts';

const run = promisify(execFile);
const engine = createOcrEngine();
const status = await engine.probe();
const pairs = engine.pairs();
/** OCRmyPDF and Tesseract are system packages: CI installs them; elsewhere the suite says what is missing. */
const skip = !status.available && process.env.CI !== 'true' ? `OCRmyPDF or Tesseract is not installed: ${status.detail ?? ''}` : false;

/** An A4 page at 300 dpi, in pixels, and in PDF points (72 a inch). */
const A4_PX = { width: 2480, height: 3508 } as const;
const A4_PT = { width: (A4_PX.width * 72) / 300, height: (A4_PX.height * 72) / 300 } as const;
/** The shares of words a reading must find: a clean page, and one scanned askew with noise. */
const CLEAN_RECALL = 0.98;
const NOISY_RECALL = 0.95;

let dir: string;
let counter = 0;

/** A page image and the text it shows. */
interface Page { png: Buffer; text: string }
/** An input of one format: its file, and the text of each of its pages. */
interface Fixture { path: string; texts: string[] }

let harbour: Page;
let library: Page;
let german: Page;
let askew: Page;
/** Each image source's fixture (a TIFF of two pages), and the image-only PDF of the same pages. */
const images = new Map<string, Fixture>();
let scanned: Fixture;

function job(inputPath: string, source: string, target: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: null, options,
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

async function write(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Words into lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * `text` on a white A4 page at 300 dpi, grey, as a scanner writes it: 12 pt (50 px) type in a
 * DejaVu font, lines 1.6 apart, 1-inch margins, the resolution stated in the PNG.
 */
async function renderPage(text: string, font: 'DejaVu Serif' | 'DejaVu Sans'): Promise<Page> {
  const lines = wrap(text, 58).map((line, i) => `<text x="300" y="${420 + i * 80}">${escapeXml(line)}</text>`);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${A4_PX.width}" height="${A4_PX.height}">`
    + `<rect width="100%" height="100%" fill="white"/><g font-family="${font}" font-size="50" fill="black">${lines.join('')}</g></svg>`;
  const png = await sharp(Buffer.from(svg), { density: 72 }).flatten({ background: 'white' }).greyscale().withDensity(300).png().toBuffer();
  return { png, text };
}


/**
 * A page as a poor scan: turned 2 degrees on a white ground, Gaussian noise on every pixel
 * (sigma 40 grey levels) and dust (one pixel in 300 black or white).
 */
async function scanAskew(page: Page): Promise<Page> {
  const { data, info } = await sharp(page.png).rotate(2, { background: 'white' }).greyscale().raw().toBuffer({ resolveWithObject: true });
  assert.equal(info.channels, 1);
  const next = seededRandom(20240611);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  for (let i = 0; i < data.length; i++) {
    const dust = next();
    if (dust < 1 / 600) data[i] = 0;
    else if (dust < 1 / 300) data[i] = 255;
    else data[i] = Math.max(0, Math.min(255, Math.round(data[i]! + gauss() * 40)));
  }
  const png = await sharp(data, { raw: { width: info.width, height: info.height, channels: 1 } }).withDensity(300).png().toBuffer();
  return { png, text: page.text };
}

/** A 24-bit Windows bitmap of a grey page (sharp writes no BMP), 300 dpi stated. */
async function bmpOf(png: Buffer): Promise<Buffer> {
  const { data, info } = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  const row = Math.ceil((width * 3) / 4) * 4;
  const bmp = Buffer.alloc(54 + row * height);
  bmp.write('BM', 0, 'latin1');
  bmp.writeUInt32LE(bmp.length, 2);
  bmp.writeUInt32LE(54, 10);
  bmp.writeUInt32LE(40, 14);
  bmp.writeInt32LE(width, 18);
  bmp.writeInt32LE(height, 22);
  bmp.writeUInt16LE(1, 26);
  bmp.writeUInt16LE(24, 28);
  bmp.writeUInt32LE(row * height, 34);
  bmp.writeInt32LE(11811, 38);
  bmp.writeInt32LE(11811, 42);
  for (let y = 0; y < height; y++) {
    const line = 54 + (height - 1 - y) * row;
    for (let x = 0; x < width; x++) bmp.fill(data[y * width + x]!, line + x * 3, line + x * 3 + 3);
  }
  return bmp;
}

/** A PNG whose header says `width` x `height` pixels, with one scanline of data: a decompression bomb. */
function pngBomb(width: number, height: number): Buffer {
  const chunk = (type: string, body: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), body]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit grey, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.alloc(1 + width, 255))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * An image-only PDF, as the service's image -> pdf step makes one before OCR: each image on a
 * page of its size at 300 dpi (a JPEG embedded as it is, other pixels losslessly), no text.
 */
async function imagePdf(pages: ({ png: Buffer } | { jpg: Buffer })[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  for (const page of pages) {
    const image = 'jpg' in page ? await pdf.embedJpg(page.jpg) : await pdf.embedPng(page.png);
    const size = { width: (image.width * 72) / 300, height: (image.height * 72) / 300 };
    pdf.addPage([size.width, size.height]).drawImage(image, { x: 0, y: 0, ...size });
  }
  return pdf.save();
}

/** Each page's text as Poppler's pdftotext reads it (no engine of convd uses Poppler). */
async function pdftotextPages(path: string): Promise<string[]> {
  const { stdout } = await run('pdftotext', ['-q', '-enc', 'UTF-8', path, '-'], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.split('\f').slice(0, -1);
}

/** Each embedded image as `pdfimages -list` shows it: page, type, width x height. */
async function pdfImageSizes(path: string): Promise<string[]> {
  const { stdout } = await run('pdfimages', ['-list', path]);
  return stdout.split('\n').slice(2).filter((line) => line.trim()).map((line) => {
    const [page, , type, width, height] = line.trim().split(/\s+/);
    return `page ${page} ${type} ${width}x${height}`;
  });
}

/** Whether a process group has ended within `ms`; else its members as /proc shows them (pid, name, state). */
async function groupGone(group: number, ms: number): Promise<true | string[]> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      process.kill(-group, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
      throw error;
    }
    if (Date.now() > until) break;
    await delay(50);
  }
  const members: string[] = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    const [state, , pgrp] = stat.slice(close + 2).split(' ');
    if (Number(pgrp) === group) members.push(`${pid} ${stat.slice(stat.indexOf('(') + 1, close)} ${state}`);
  }
  return members;
}

/** The pages of an engine's -> txt: a form feed between pages, one newline at the end. */
function textPages(text: string): string[] {
  assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'), `one newline at the end: ${JSON.stringify(text.slice(-20))}`);
  return text.slice(0, -1).split('\f');
}

/** Each page read finds at least `least` of its words; the recall is printed. */
function assertRecall(t: TestContext, what: string, expected: string[], read: string[], least = CLEAN_RECALL): void {
  assert.equal(read.length, expected.length, `${what}: ${expected.length} page(s), read ${JSON.stringify(read).slice(0, 400)}`);
  expected.forEach((text, page) => {
    const recall = wordRecall(text, read[page]!);
    t.diagnostic(`${what}, page ${page + 1}: recall ${describeRecall(recall)}`);
    assert.ok(recall.share >= least, `${what}, page ${page + 1}: ${describeRecall(recall)} < ${least * 100} %\n${read[page]}`);
  });
}

/** Progress as the engine told it: starts at 0, never goes back, stays within 0..100 and ends at 100. */
function assertProgress(t: TestContext, progress: number[], pages: number): void {
  t.diagnostic(`progress: ${progress.join(', ')}`);
  assert.ok(progress.length >= 2, `progress was reported: ${progress.join(', ')}`);
  assert.equal(progress[0], 0);
  assert.equal(progress.at(-1), 100);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! >= progress[i - 1]!, `progress never goes back: ${progress.join(', ')}`);
  assert.ok(progress.every((p) => p >= 0 && p <= 100));
  if (pages > 1) assert.ok(progress.some((p) => p > 0 && p < 100), `a ${pages}-page run reports between its pages: ${progress.join(', ')}`);
}

before(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'convd-ocr-'));
  [harbour, library, german] = await Promise.all([
    renderPage(ENGLISH_HARBOUR, 'DejaVu Serif'),
    renderPage(ENGLISH_LIBRARY, 'DejaVu Sans'),
    renderPage(GERMAN_TRAMS, 'DejaVu Sans'),
  ]);
  askew = await scanAskew(harbour);
  const one = [harbour.text];
  images.set('png', { path: await write('harbour.png', harbour.png), texts: one });
  images.set('jpg', { path: await write('harbour.jpg', await sharp(harbour.png).jpeg({ quality: 90 }).withDensity(300).toBuffer()), texts: one });
  images.set('webp', { path: await write('harbour.webp', await sharp(harbour.png).webp({ quality: 90 }).toBuffer()), texts: one });
  images.set('bmp', { path: await write('harbour.bmp', await bmpOf(harbour.png)), texts: one });
  // A TIFF of two pages, as a scanner's document feeder writes them.
  const tiff = await sharp([harbour.png, library.png], { join: { animated: true } }).greyscale().withDensity(300).tiff({ compression: 'lzw' }).toBuffer();
  assert.equal((await sharp(tiff).metadata()).pages, 2, 'the TIFF has two pages');
  images.set('tiff', { path: await write('two-pages.tiff', tiff), texts: [harbour.text, library.text] });
  scanned = { path: await write('scanned.pdf', await imagePdf([harbour, library])), texts: [harbour.text, library.text] };
});

after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * The image-only PDF the service's image -> pdf step hands to OCR for an image of `source`: a
 * JPEG as it is, the other formats' pixels (decoded here from the very pages they were made of).
 */
async function pdfOfImage(source: string): Promise<string> {
  let pages: ({ png: Buffer } | { jpg: Buffer })[] = source === 'tiff' ? [harbour, library] : [harbour];
  if (source === 'jpg') pages = [{ jpg: await readFile(images.get('jpg')!.path) }];
  if (source === 'webp') pages = [{ png: await sharp(images.get('webp')!.path).greyscale().png().toBuffer() }];
  return write(`${source}-made.pdf`, await imagePdf(pages));
}

describe('ocr engine', { skip }, () => {
  it('offers pdf -> pdf and image -> pdf as a step on `ocr`, pdf -> txt as the fallback, image -> txt', () => {
    assert.ok(status.available, status.detail);
    assert.deepEqual(pairs.map((p) => `${p.source}->${p.target}`).sort(), [
      'bmp->pdf', 'bmp->txt', 'jpg->pdf', 'jpg->txt', 'pdf->pdf', 'pdf->txt', 'png->pdf', 'png->txt', 'tiff->pdf', 'tiff->txt', 'webp->pdf', 'webp->txt',
    ]);
    const pair = (source: string, target: string) => pairs.find((p) => p.source === source && p.target === target)!;
    assert.deepEqual(pair('pdf', 'pdf').onOption, { option: 'ocr', place: 'before' });
    assert.deepEqual(pair('png', 'pdf').onOption, { option: 'ocr', place: 'after' });
    assert.deepEqual(pair('pdf', 'txt').onOption, { option: 'ocr', place: 'instead' });
    assert.equal(pair('pdf', 'txt').fallbackOnly, true);
    const language = pair('png', 'txt').options.find((o) => o.name === 'language')!;
    for (const value of ['eng', 'deu', 'eng+deu']) assert.match(value, new RegExp(`^(?:${language.pattern})$`), `language ${value}`);
    assert.doesNotMatch('osd', new RegExp(`^(?:${language.pattern})$`), 'osd is no language');
  });
});

describe('every ocr pair reads the words of every page', { skip }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async (t) => {
      const fixture = pair.source === 'pdf' ? scanned : images.get(pair.source);
      if (!fixture) assert.fail(`no fixture for ${pair.source}: add one`);
      const progress: number[] = [];
      const onProgress = (p: number) => progress.push(p);
      if (pair.target === 'txt') {
        // pdf -> txt runs as the text engine's fallback, on a PDF without a text layer.
        const made = job(fixture.path, pair.source, 'txt', {}, { onProgress });
        const began = Date.now();
        const failed = await engine.convert(made).then(() => undefined, (error: unknown) => error);
        assert.equal(failed, undefined, `${pair.source} -> txt refused its fixture: ${String(failed)}`);
        t.diagnostic(`${pair.source} -> txt: ${Date.now() - began} ms`);
        assertRecall(t, `${pair.source} -> txt`, fixture.texts, textPages(await readFile(made.outputPath, 'utf8')));
      } else if (pair.target === 'pdf') {
        // image -> pdf: the image engine made the PDF, and OCR gets that PDF (source pdf).
        const input = pair.source === 'pdf' ? fixture.path : await pdfOfImage(pair.source);
        const made = job(input, 'pdf', 'pdf', { ocr: true }, { onProgress, ...(pair.source === 'pdf' ? {} : { origin: pair.source }) });
        const began = Date.now();
        await engine.convert(made);
        t.diagnostic(`${pair.source} -> pdf: ${Date.now() - began} ms`);
        assertRecall(t, `${pair.source} -> pdf (pdftotext)`, fixture.texts, await pdftotextPages(made.outputPath));
        const [sourceImages, resultImages] = await Promise.all([pdfImageSizes(input), pdfImageSizes(made.outputPath)]);
        t.diagnostic(`page images: ${resultImages.join('; ')}`);
        assert.deepEqual(resultImages, sourceImages, 'the page images keep their pixel size');
        assert.equal(sourceImages.filter((line) => line.includes(' image ')).length, fixture.texts.length, `one image a page: ${sourceImages.join('; ')}`);
        const pdf = await PDFDocument.load(await readFile(made.outputPath));
        assert.equal(pdf.getPageCount(), fixture.texts.length, 'as many pages as the source');
        const { width, height } = pdf.getPage(0).getSize();
        assert.deepEqual([width, height].map((n) => n.toFixed(1)), [A4_PT.width, A4_PT.height].map((n) => n.toFixed(1)), 'the page keeps its size');
      } else {
        assert.fail(`no expectation for ${pair.source} -> ${pair.target}: add one`);
      }
      assertProgress(t, progress, fixture.texts.length);
    });
  }
});

describe('ocr accuracy beyond a clean page', { skip }, () => {
  it(`a page scanned 2 degrees askew with noise: png -> txt finds at least ${NOISY_RECALL * 100} % of the words`, async (t) => {
    const made = job(await write('askew.png', askew.png), 'png', 'txt');
    await engine.convert(made);
    assertRecall(t, 'askew, noisy png -> txt', [askew.text], textPages(await readFile(made.outputPath, 'utf8')), NOISY_RECALL);
  });

  it('German with umlauts and ß, read with language deu: every umlaut word is found', async (t) => {
    const made = job(await write('german.png', german.png), 'png', 'txt', { language: 'deu' });
    await engine.convert(made);
    const [read] = textPages(await readFile(made.outputPath, 'utf8'));
    assertRecall(t, 'German png -> txt (deu)', [german.text], [read!]);
    const umlauts = wordsOf(german.text).filter((word) => /[äöüß]/.test(word));
    t.diagnostic(`umlaut words: ${umlauts.length}`);
    assert.ok(umlauts.length >= 20, 'the fixture has umlaut words');
    const readWords = new Set(wordsOf(read!));
    assert.deepEqual(umlauts.filter((word) => !readWords.has(word)), [], 'every umlaut and ß word read as written');
  });

  it('a PDF with text is not read again in skip mode: the text page unchanged, the scanned page read', async (t) => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const page = pdf.addPage([A4_PT.width, A4_PT.height]);
    wrap(ENGLISH_LIBRARY, 80).forEach((line, i) => page.drawText(line, { x: 72, y: 760 - i * 18, size: 11, font }));
    const scan = await pdf.embedPng(harbour.png);
    pdf.addPage([A4_PT.width, A4_PT.height]).drawImage(scan, { x: 0, y: 0, ...A4_PT });
    const input = await write('mixed.pdf', await pdf.save());
    const made = job(input, 'pdf', 'pdf', { ocr: true, ocr_mode: 'skip' });
    await engine.convert(made);
    const [sourceTexts, resultTexts] = await Promise.all([pdftotextPages(input), pdftotextPages(made.outputPath)]);
    assert.equal(sourceTexts.length, 2);
    assert.equal(wordRecall(ENGLISH_LIBRARY, sourceTexts[0]!).share, 1, 'the text page holds its text');
    assert.equal(sourceTexts[1]!.trim(), '', 'the scanned page has no text before');
    assert.equal(resultTexts.length, 2);
    assert.equal(resultTexts[0], sourceTexts[0], 'the text page\'s text is unchanged (not OCRed)');
    assertRecall(t, 'mixed pdf -> pdf, scanned page', [harbour.text], [resultTexts[1]!]);
  });
});

describe('what the ocr engine refuses, and how it stops', { skip }, () => {
  /** Every run of OCRmyPDF and Tesseract is logged by a wrapper: refusals before work start none. */
  let log: string;
  let spyEnv: NodeJS.ProcessEnv;
  const runs = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter((line) => line && !/ --(?:version|list-langs)$/.test(line));

  before(async () => {
    log = join(dir, 'runs.log');
    const spy = async (name: string, real: string) => {
      const path = join(dir, `spy-${name}`);
      await writeFile(path, `#!/bin/sh\necho "${name} $*" >> '${log}'\nexec '${real}' "$@"\n`);
      await chmod(path, 0o755);
      return path;
    };
    spyEnv = {
      ...process.env,
      CONVD_OCRMYPDF_PATH: await spy('ocrmypdf', (await run('sh', ['-c', 'command -v ocrmypdf'])).stdout.trim()),
      CONVD_TESSERACT_PATH: await spy('tesseract', (await run('sh', ['-c', 'command -v tesseract'])).stdout.trim()),
    };
  });

  it('a PNG whose header claims 100000 x 100000 pixels: input_invalid before Tesseract starts', async () => {
    const spied = createOcrEngine({ env: spyEnv });
    assert.ok((await spied.probe()).available);
    const bomb = await write('bomb.png', pngBomb(100_000, 100_000));
    const began = Date.now();
    const failure = await rejectsWith(spied.convert(job(bomb, 'png', 'txt')), 'input_invalid');
    assert.match(failure.message, /100,000 x 100,000 pixels/);
    assert.ok(Date.now() - began < 2000, 'refused at once');
    assert.deepEqual(await runs(), [], 'no OCR program ran');
    // At submission its pages are counted from the header, without decoding it, quickly.
    const counting = Date.now();
    assert.equal(await spied.pagesOf(bomb, 'png'), 1, 'one page, read from the header');
    assert.ok(Date.now() - counting < 2000, 'counted at once');
    assert.deepEqual(await runs(), [], 'no OCR program ran for the count either');
  });

  it('an image over max_input_pixels (1000 here), as image and as PDF: input_invalid', async () => {
    const guarded = createOcrEngine({ maxInputPixels: 1000, env: spyEnv });
    assert.ok((await guarded.probe()).available);
    const failure = await rejectsWith(guarded.convert(job(images.get('png')!.path, 'png', 'txt')), 'input_invalid');
    assert.match(failure.message, /2,480 x 3,508 pixels .*at most 1,000 pixels/);
    assert.deepEqual(await runs(), [], 'Tesseract never started');
    // In a PDF the images are found by OCRmyPDF itself, as it draws the pages.
    const inPdf = await rejectsWith(guarded.convert(job(scanned.path, 'pdf', 'txt')), 'input_invalid');
    assert.match(inPdf.message, /larger than the limit of 1,000 pixels/);
    assert.ok(!inPdf.message.includes(dir), `no server path in the message: ${inPdf.message}`);
  });

  it('a file over the plan\'s OCR pages (maxOcrPages 1): input_invalid naming the cap, before any OCR', async () => {
    const spied = createOcrEngine({ env: spyEnv });
    await spied.probe();
    await writeFile(log, '');
    for (const [path, source] of [[scanned.path, 'pdf'], [images.get('tiff')!.path, 'tiff']] as const) {
      for (const target of ['txt', 'pdf']) {
        if (source === 'tiff' && target === 'pdf') continue;
        const made = job(path, source, target, target === 'pdf' ? { ocr: true } : {}, { maxOcrPages: 1 });
        const failure = await rejectsWith(spied.convert(made), 'input_invalid');
        assert.match(failure.message, /has 2 pages; OCR reads at most 1 pages/, `${source} -> ${target}`);
        assert.deepEqual(failure.details, { pages: 2, limit: 1 });
      }
    }
    assert.deepEqual(await runs(), [], 'neither OCRmyPDF nor Tesseract ran');
    assert.equal(await spied.pagesOf(scanned.path, 'pdf'), 2, 'counted at submission too');
    assert.equal(await spied.pagesOf(images.get('tiff')!.path, 'tiff'), 2);
  });

  it('a corrupt PDF (random bytes, with and without a PDF header) fails in words, not a crash', async (t) => {
    const next = seededRandom(7);
    const noise = Buffer.from(Array.from({ length: 64 * 1024 }, () => Math.floor(next() * 256)));
    for (const [name, bytes] of [['random.pdf', noise], ['headed.pdf', Buffer.concat([Buffer.from('%PDF-1.7\n'), noise])]] as const) {
      const path = await write(name, bytes);
      for (const target of ['txt', 'pdf']) {
        let caught: unknown;
        await engine.convert(job(path, 'pdf', target, target === 'pdf' ? { ocr: true } : {})).catch((error: unknown) => (caught = error));
        const code = (caught as { code?: string } | undefined)?.code;
        assert.ok(code === 'input_invalid' || code === 'conversion_failed', `${name} -> ${target}: ${String(caught)}`);
        const message = (caught as Error).message;
        t.diagnostic(`${name} -> ${target}: ${code}: ${message}`);
        assert.ok(!message.includes(dir), `no server path in the message: ${message}`);
      }
    }
    assert.deepEqual(liveChildPids(), []);
  });

  it('an aborted job rejects with the abort\'s reason and leaves no process nor work folder', async (t) => {
    const out = join(dir, 'aborted');
    await mkdir(out);
    const controller = new AbortController();
    const made = job(scanned.path, 'pdf', 'pdf', { ocr: true }, { signal: controller.signal, outputPath: join(out, 'out.pdf') });
    const began = Date.now();
    const running = engine.convert(made);
    running.catch(() => undefined);
    // Abort once OCRmyPDF has run a while (its Tesseract busy with page 1).
    const groups = new Set<number>();
    while (Date.now() - began < 20_000) {
      await delay(100);
      const live = liveChildPids();
      for (const pid of live) groups.add(pid);
      if (live.length > 0 && Date.now() - began > 1500) break;
    }
    assert.ok(groups.size > 0, 'OCRmyPDF was running');
    const reason = new Error('cancelled by the test');
    const aborted = Date.now();
    controller.abort(reason);
    await assert.rejects(running, (error) => error === reason);
    t.diagnostic(`aborted ${aborted - began} ms in, rejected ${Date.now() - aborted} ms later`);
    assert.ok(Date.now() - aborted < 5000, 'stopped within the kill grace');
    assert.deepEqual(liveChildPids(), [], 'no child left');
    // Its group, Tesseract and Ghostscript with OCRmyPDF, was killed: gone once the kernel has
    // finished them and their reaper has collected them (moments).
    for (const group of groups) {
      const gone = await groupGone(group, 3000);
      assert.ok(gone === true, `process group ${group} is gone: ${gone === true ? '' : gone.join('; ')}`);
    }
    assert.deepEqual((await readdir(out)).filter((name) => name.startsWith('ocr-')), [], 'the work folder is removed');
  });
});
