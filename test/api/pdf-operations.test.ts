/**
 * PDF operations over HTTP: the options of pdf -> pdf and pdf -> json as a client sends them,
 * the refusals of options that need or exclude another, and a result of several files served
 * as a zip (a split PDF, every page of a PDF as images), read back with yauzl and pdfinfo.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { ZipFile } from 'yazl';
import {
  assertError, assertFieldErrors, call, download, getAccount, newAccount, submitFile, type Client, type FormatDetails, type PublicConversion,
} from '../helpers/api-support.ts';
import { longDocx } from '../helpers/stuck-documents.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { zipEntries } from '../helpers/zip-read.ts';

const run = promisify(execFile);

/** A zip made with yazl (stored entries), from names and contents. */
async function zipOf(path: string, entries: [string, Buffer][]): Promise<void> {
  const zip = new ZipFile();
  for (const [name, data] of entries) zip.addBuffer(data, name);
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
}

async function fourPages(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc.setTitle('Minutes');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= 4; p++) doc.addPage([300, 400]).drawText(`Minutes page ${p}`, { x: 30, y: 350, size: 18, font });
  return Buffer.from(await doc.save());
}

describe('PDF operations over HTTP', () => {
  let daemon: DaemonHandle;
  let pdf: Buffer;
  let dir: string;
  before(async () => {
    [daemon, pdf, dir] = await Promise.all([startDaemon(), fourPages(), mkdtemp(join(tmpdir(), 'convd-pdfops-api-'))]);
  });
  after(async () => {
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  async function converted(fields: Record<string, string>): Promise<PublicConversion> {
    const got = await submitFile(daemon, { wait: '30', ...fields }, { data: pdf, name: 'minutes.pdf' });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
    return got.body;
  }

  it('the formats listing offers every operation, with what each option needs or excludes', async () => {
    const got = await call<FormatDetails>(daemon, '/formats/pdf');
    assert.equal(got.status, 200);
    const toPdf = got.body.data.find((d) => d.target === 'pdf')!;
    assert.deepEqual(toPdf.variants.map((v) => v.key), ['compress', 'linearize']);
    const option = (name: string) => toPdf.options.find((o) => o.name === name);
    assert.deepEqual(option('watermark_opacity')?.requires, ['watermark_text', 'watermark_image']);
    assert.equal(option('watermark_image')?.file, true);
    assert.deepEqual(option('stamp_image')?.excludes, ['stamp_text']);
    assert.deepEqual(option('pdfa')?.excludes, ['encrypt_user_password', 'encrypt_owner_password']);
    assert.equal(option('encrypt_user_password')?.secret, true);
    assert.deepEqual(option('pdfua')?.excludes, ['pdfa', 'flatten', 'pages', 'split_every', 'split_ranges']);
    assert.ok(got.body.data.some((d) => d.target === 'json'));
  });

  it('an option without the one it needs, and two that exclude each other, are 422 naming each', async () => {
    const needs = await submitFile(daemon, { target: 'pdf', watermark_opacity: '0.5' }, { data: pdf, name: 'minutes.pdf' });
    assert.equal(assertFieldErrors(needs, ['options.watermark_opacity'])['options.watermark_opacity']!.reason, 'requires_other');
    const excludes = await submitFile(daemon, { target: 'pdf', pdfa: '2b', encrypt_user_password: 'x' }, { data: pdf, name: 'minutes.pdf' });
    const problems = assertFieldErrors(excludes, ['options.pdfa', 'options.encrypt_user_password']);
    assert.match(problems['options.pdfa']!.message, /cannot be given together with encrypt_user_password/);
  });

  it('operations run through the daemon; the passwords are never shown with the conversion', async () => {
    const conversion = await converted({ target: 'pdf', pages: '2-3', page_numbers: '{n}/{total}', encrypt_user_password: 'secret pw' });
    assert.deepEqual(conversion.options, { pages: '2-3', page_numbers: '{n}/{total}' });
    assert.equal(conversion.result?.filename, 'minutes.pdf');
    const file = await download(daemon, conversion.id);
    const path = join(dir, 'ops.pdf');
    await writeFile(path, file.bytes);
    const { stdout } = await run('pdftotext', ['-upw', 'secret pw', path, '-']);
    assert.deepEqual([...stdout.matchAll(/Minutes page (\d)/g)].map((m) => m[1]), ['2', '3']);
    assert.match(stdout, /1\/2[\s\S]*2\/2/);
  });

  /** A merge as a client sends it: several `file` parts, in order. */
  async function merge(client: Client, files: { name: string; data: Buffer }[], fields: Record<string, string> = {}) {
    const body = new FormData();
    for (const [name, value] of Object.entries({ target: 'pdf', wait: '30', ...fields })) body.append(name, value);
    for (const file of files) body.append('file', new Blob([file.data]), file.name);
    return call<PublicConversion>(client, '/conversions', { method: 'POST', body });
  }

  async function mergeFixtures(): Promise<{ name: string; data: Buffer }[]> {
    const png = await sharp({ create: { width: 120, height: 80, channels: 3, background: '#3366cc' } }).png().toBuffer();
    return [
      { name: 'minutes.pdf', data: pdf },
      { name: 'photo.png', data: png },
      { name: 'notes.txt', data: Buffer.from('NOTES-MARKER: the text file, on a page of its own\n') },
      { name: 'letter.docx', data: longDocx(3, 'DOCX-MARKER') },
    ];
  }

  it('an office document to images, every page: one zip, each page rendered from its PDF (pages is the renderer\'s, not LibreOffice\'s)', async () => {
    const docx = longDocx(30, 'PAGES-MARKER');
    const got = await submitFile(daemon, { wait: '30', target: 'png', pages: 'all', dpi: '36' }, { data: docx, name: 'long.docx' });
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
    assert.equal(got.body.result?.filename, 'long.zip');
    const entries = await zipEntries((await download(daemon, got.body.id)).bytes);
    assert.ok(entries.length >= 3, `${entries.length} pages`);
    assert.deepEqual(entries.map((e) => e.name), entries.map((_, index) => `page-${index + 1}.png`));
    for (const entry of entries) assert.equal((await sharp(entry.bytes).metadata()).format, 'png');
    const reordered = await submitFile(daemon, { wait: '30', target: 'png', pages: '3,1', dpi: '36' }, { data: docx, name: 'long.docx' });
    assert.equal(reordered.body.status, 'succeeded', JSON.stringify(reordered.body));
    assert.deepEqual((await zipEntries((await download(daemon, reordered.body.id)).bytes)).map((e) => e.name), ['page-3.png', 'page-1.png']);
  });

  it('a merge: a PDF, a PNG, a text file and a docx, each made a PDF, merged in the order sent, its files listed', async () => {
    const files = await mergeFixtures();
    const got = await merge(daemon, files, { page_numbers: '{n}/{total}' });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const conversion = got.body;
    assert.equal(conversion.status, 'succeeded', JSON.stringify(conversion.error));
    assert.deepEqual(conversion.inputs, files.map((file) => ({ name: file.name, size: file.data.length, format: file.name.split('.')[1] })));
    assert.equal(conversion.original_name, 'minutes.pdf');
    assert.equal(conversion.input_size, files.reduce((sum, file) => sum + file.data.length, 0));
    assert.equal(conversion.result?.filename, 'minutes.pdf');
    const path = join(dir, 'merged.pdf');
    await writeFile(path, (await download(daemon, conversion.id)).bytes);
    const pages = (await run('pdftotext', [path, '-'])).stdout.split('\f').slice(0, -1);
    assert.ok(pages.length >= 7, `${pages.length} pages`);
    const firstOf = (pattern: RegExp) => pages.findIndex((text) => pattern.test(text));
    assert.deepEqual([1, 2, 3, 4].map((n) => firstOf(new RegExp(`Minutes page ${n}`))), [0, 1, 2, 3]);
    assert.equal(firstOf(/NOTES-MARKER/), 5, 'the image is page 5, the text file page 6');
    assert.equal(firstOf(/DOCX-MARKER/), 6);
    assert.match(pages.at(-1)!, new RegExp(`${pages.length}/${pages.length}`), 'page numbers run over the whole merge');
    const { stdout } = await run('pdfimages', ['-list', '-f', '5', '-l', '5', path]);
    assert.match(stdout, /\s120\s+80\s/, 'page 5 holds the 120 x 80 image');
  });

  it('merge_order=name; a file that cannot become a PDF, and several files to another target, are refused', async () => {
    const files = await mergeFixtures();
    const sorted = await merge(daemon, [files[2]!, files[0]!], { merge_order: 'name' });
    assert.equal(sorted.body.status, 'succeeded', JSON.stringify(sorted.body));
    assert.deepEqual(sorted.body.inputs?.map((input) => input.name), ['minutes.pdf', 'notes.txt']);
    const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(40)]);
    const refused = await merge(daemon, [files[0]!, { name: 'sound.wav', data: wav }]);
    const error = assertError(refused, 422, 'unsupported_conversion');
    assert.equal(error.details?.file, 'sound.wav');
    const toPng = await merge(daemon, [files[0]!, files[1]!], { target: 'png' });
    assertFieldErrors(toPng, ['file']);
  });

  it('a zip sent to pdf is merged: its files in name order, in any folder, the zip\'s name on the result; too many files are refused', async () => {
    const files = await mergeFixtures();
    const zipped = join(dir, 'bundle.zip');
    await zipOf(zipped, [
      ['scans/2-photo.png', files[1]!.data], ['scans/10-notes.txt', files[2]!.data], ['scans/1-minutes.pdf', pdf],
      ['__MACOSX/scans/._1-minutes.pdf', Buffer.from('junk')], ['scans/.DS_Store', Buffer.from('junk')],
    ]);
    const got = await submitFile(daemon, { wait: '30', target: 'pdf' }, { data: await readFile(zipped), name: 'bundle.zip' });
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
    assert.deepEqual(got.body.inputs?.map((input) => [input.name, input.format]), [['1-minutes.pdf', 'pdf'], ['2-photo.png', 'png'], ['10-notes.txt', 'txt']]);
    assert.equal(got.body.result?.filename, 'bundle.pdf');
    const merged = await PDFDocument.load((await download(daemon, got.body.id)).bytes);
    assert.equal(merged.getPageCount(), 6);
    // One file in a zip is merged as well (one PDF of it); the same name twice is refused.
    const single = join(dir, 'single.zip');
    await zipOf(single, [['only.txt', Buffer.from('ONLY-FILE\n')]]);
    const one = await submitFile(daemon, { wait: '30', target: 'pdf' }, { data: await readFile(single), name: 'single.zip' });
    assert.equal(one.body.status, 'succeeded', JSON.stringify(one.body));
    assert.deepEqual(one.body.inputs?.map((input) => input.name), ['only.txt']);
    assert.equal((await PDFDocument.load((await download(daemon, one.body.id)).bytes)).getPageCount(), 1);
    const twice = join(dir, 'twice.zip');
    await zipOf(twice, [['a.txt', Buffer.from('first\n')], ['a.txt', Buffer.from('second\n')]]);
    const refusedTwice = await submitFile(daemon, { target: 'pdf' }, { data: await readFile(twice), name: 'twice.zip' });
    assert.match(assertFieldErrors(refusedTwice, ['file']).file!.message, /holds a\.txt twice/);
    const many = join(dir, 'many.zip');
    await zipOf(many, Array.from({ length: 51 }, (_, i) => [`${i}.txt`, Buffer.from(`file ${i}\n`)] as [string, Buffer]));
    const refused = await submitFile(daemon, { target: 'pdf' }, { data: await readFile(many), name: 'many.zip' });
    assert.match(assertFieldErrors(refused, ['file']).file!.message, /more than 50 files; at most 50 are merged/);
  });

  it('a plan caps the files of a merge: eleven on the free plan (ten) are refused naming the cap', async () => {
    const client = await newAccount(daemon, 'free');
    const notes = Array.from({ length: 11 }, (_, i) => ({ name: `note-${i}.txt`, data: Buffer.from(`note ${i}\n`) }));
    const refused = await merge(client, notes);
    assert.match(assertFieldErrors(refused, ['file']).file!.message, /11 files; at most 10 are merged on the Free plan/);
    const fine = await merge(client, notes.slice(0, 10));
    assert.equal(fine.body.status, 'succeeded', JSON.stringify(fine.body));
  });

  it('the files of one request together are what max_upload_mb allows, chunked or not', async () => {
    const client = await newAccount(daemon, 'free');
    const boundary = 'convd-test-boundary';
    const part = (name: string) => Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${name}"\r\ncontent-type: text/plain\r\n\r\n`);
    const sixty = Buffer.alloc(60 * 1024 * 1024, 0x61);
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${daemon.baseUrl}/conversions`);
      const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: {
        authorization: `Bearer ${client.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked',
      } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
      request.write(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="target"\r\n\r\npdf\r\n`));
      // Two files of 60 MB each: each under the free plan's 100, together over it.
      for (const name of ['a.txt', 'b.txt']) {
        request.write(part(name));
        request.write(sixty);
        request.write('\r\n');
      }
      request.end(`--${boundary}--\r\n`);
    });
    assert.equal(status, 413);
  });

  it('a merge costs the merge and each file\'s own conversion to PDF: pdf 1 + png 1 + txt 1 + docx 2', async () => {
    const client = await newAccount(daemon, 'lite');
    const before = (await getAccount(client)).body.credits.remaining!;
    const got = await merge(client, await mergeFixtures());
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
    assert.equal(got.body.credits, 5);
    assert.equal((await getAccount(client)).body.credits.remaining, before - 5);
  });

  /** The pages of a PDF on which pdfimages lists an image (not its soft mask). */
  async function pagesWithImages(bytes: Uint8Array): Promise<string[]> {
    const path = join(dir, `images-${Math.random().toString(36).slice(2)}.pdf`);
    await writeFile(path, bytes);
    const rows = (await run('pdfimages', ['-list', path])).stdout.split('\n').slice(2).filter((line) => line.trim() !== '').map((line) => line.trim().split(/\s+/));
    return rows.filter((row) => row[2] === 'image').map((row) => row[0]!);
  }

  it('an image watermark: the image sent as another file part, named by watermark_image; alone or on a merge; bad names refused', async () => {
    const logo = await sharp({ create: { width: 160, height: 90, channels: 4, background: { r: 200, g: 0, b: 0, alpha: 0.6 } } }).png().toBuffer();
    const withLogo = [{ name: 'minutes.pdf', data: pdf }, { name: 'logo.png', data: logo }];
    const got = await merge(daemon, withLogo, { watermark_image: 'logo.png', watermark_width: '30' });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body.error));
    assert.deepEqual(got.body.options, { watermark_image: 'logo.png', watermark_width: 30 });
    assert.equal(got.body.original_name, 'minutes.pdf');
    assert.deepEqual(got.body.inputs, [{ name: 'minutes.pdf', size: pdf.length, format: 'pdf' }], 'the image is not one of the inputs');
    assert.equal(got.body.credits, 0, 'unmetered');
    const marked = (await download(daemon, got.body.id)).bytes;
    assert.equal((await PDFDocument.load(marked)).getPageCount(), 4);
    assert.deepEqual(await pagesWithImages(marked), ['1', '2', '3', '4']);
    // A merge of two PDFs with a TIFF stamp: eight pages, each stamped; the image sent first is no input either.
    const seal = await sharp(logo).tiff().toBuffer();
    const merged = await merge(daemon, [{ name: 'seal.tif', data: seal }, { name: 'a.pdf', data: pdf }, { name: 'b.pdf', data: pdf }], { stamp_image: 'seal.tif' });
    assert.equal(merged.body.status, 'succeeded', JSON.stringify(merged.body));
    assert.deepEqual(merged.body.inputs?.map((one) => one.name), ['a.pdf', 'b.pdf']);
    assert.deepEqual(await pagesWithImages((await download(daemon, merged.body.id)).bytes), ['1', '2', '3', '4', '5', '6', '7', '8']);
    // Refused, naming the option: no such part, two parts of that name, a part that is no image, a URL input.
    const missing = await merge(daemon, withLogo, { watermark_image: 'seal.png' });
    assert.match(assertFieldErrors(missing, ['options.watermark_image'])['options.watermark_image']!.message, /no file named seal\.png was sent/);
    const twice = await merge(daemon, [...withLogo, { name: 'logo.png', data: logo }], { watermark_image: 'logo.png' });
    assert.match(assertFieldErrors(twice, ['options.watermark_image'])['options.watermark_image']!.message, /2 files are named logo\.png/);
    const text = await merge(daemon, [{ name: 'minutes.pdf', data: pdf }, { name: 'logo.png', data: Buffer.from('not a picture') }], { watermark_image: 'logo.png' });
    assert.match(assertFieldErrors(text, ['options.watermark_image'])['options.watermark_image']!.message, /logo\.png is not a PNG, JPEG, WebP, GIF or TIFF image/);
    const form = new FormData();
    for (const [name, value] of Object.entries({ target: 'pdf', url: 'https://example.com/a.pdf', watermark_image: 'logo.png' })) form.append(name, value);
    form.append('file', new Blob([logo]), 'logo.png');
    const fromUrl = await call<PublicConversion>(daemon, '/conversions', { method: 'POST', body: form });
    assert.match(assertFieldErrors(fromUrl, ['options.watermark_image'])['options.watermark_image']!.message, /not on one fetched from a URL/);
    const both = await merge(daemon, withLogo, { watermark_image: 'logo.png', watermark_text: 'DRAFT' });
    assertFieldErrors(both, ['options.watermark_image', 'options.watermark_text']);
    // An image beside a conversion that draws none: the option is not one of png -> webp's.
    const notHere = await merge(daemon, [{ name: 'photo.png', data: logo }, { name: 'logo.png', data: logo }], { target: 'webp', watermark_image: 'logo.png' });
    assertFieldErrors(notHere, ['options.watermark_image']);
  });

  it('a split is one zip: named and served as one, each part a PDF of its pages', async () => {
    const conversion = await converted({ target: 'pdf', split_every: '1' });
    assert.equal(conversion.result?.filename, 'minutes.zip');
    assert.equal(conversion.result?.mime, 'application/zip');
    const file = await download(daemon, conversion.id);
    // The spec serves every result as application/octet-stream; the name and result.mime say zip.
    assert.equal(file.headers.get('content-type'), 'application/octet-stream');
    assert.match(file.headers.get('content-disposition') ?? '', /minutes\.zip/);
    const entries = await zipEntries(file.bytes);
    assert.deepEqual(entries.map((e) => e.name), ['pages-1.pdf', 'pages-2.pdf', 'pages-3.pdf', 'pages-4.pdf']);
    for (const [index, entry] of entries.entries()) {
      const doc = await PDFDocument.load(entry.bytes);
      assert.equal(doc.getPageCount(), 1);
      assert.equal(doc.getTitle(), 'Minutes');
      const path = join(dir, `part-${index}.pdf`);
      await writeFile(path, entry.bytes);
      assert.match((await run('pdftotext', [path, '-'])).stdout, new RegExp(`Minutes page ${index + 1}`));
    }
  });

  it('every page as images is one zip of decodable images; pdf -> json describes the file', async () => {
    const images = await converted({ target: 'png', pages: 'all', dpi: '36' });
    assert.equal(images.result?.filename, 'minutes.zip');
    const entries = await zipEntries((await download(daemon, images.id)).bytes);
    assert.deepEqual(entries.map((e) => e.name), ['page-1.png', 'page-2.png', 'page-3.png', 'page-4.png']);
    for (const entry of entries) {
      const meta = await sharp(entry.bytes).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 150, 200]);
    }
    const facts = await converted({ target: 'json' });
    assert.equal(facts.result?.mime, 'application/json');
    const json = JSON.parse((await download(daemon, facts.id)).bytes.toString('utf8')) as { pages: number; title: string; page_sizes: unknown[] };
    assert.deepEqual([json.pages, json.title, json.page_sizes.length], [4, 'Minutes', 4]);
  });
});
