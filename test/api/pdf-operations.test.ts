/**
 * PDF operations over HTTP: the options of pdf -> pdf and pdf -> json as a client sends them,
 * the refusals of options that need or exclude another, and a result of several files served
 * as a zip (a split PDF, every page of a PDF as images), read back with yauzl and pdfinfo.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { assertFieldErrors, call, download, submitFile, type FormatDetails, type PublicConversion } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { zipEntries } from '../helpers/zip-read.ts';

const run = promisify(execFile);

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
    assert.deepEqual(option('watermark_opacity')?.requires, ['watermark_text']);
    assert.deepEqual(option('pdfa')?.excludes, ['encrypt_user_password', 'encrypt_owner_password']);
    assert.equal(option('encrypt_user_password')?.secret, true);
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
