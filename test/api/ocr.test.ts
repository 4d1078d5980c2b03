/**
 * OCR over HTTP and from the CLI: the options as the formats listing offers them (the installed
 * languages, what `ocr` then costs), a scanned PDF's text read without being asked (pdf -> txt of
 * a PDF with no text layer), `ocr=true` on pdf -> pdf and png -> pdf (a searchable PDF, read back
 * with pdftotext, the page image kept) and its OCR weight charged, German read with `language=deu`,
 * and the refusals at submission: a language not installed, `ocr_mode` without `ocr`, OCR of a
 * merge or with a password (OCR runs before the password opens the file), and a 50-page scan over
 * the free plan's OCR pages; a conversion accepted with `ocr=true` run where OCR is not installed
 * fails in words rather than making a PDF without its text.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { createOcrEngine } from '../../src/engines/ocr/ocr-engine.ts';
import { createPdfOperationsEngine } from '../../src/engines/pdfops/pdfops-engine.ts';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import { refuseOptionsNotOffered } from '../../src/service/run/options-offered.ts';
import {
  assertFieldErrors, call, download, newAccount, submitFile, type Client, type FormatDetails, type PublicConversion,
} from '../helpers/api-support.ts';
import { cleanEnv, spawnConv } from '../helpers/cli-helpers.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { scannedLines, scannedPdf } from '../helpers/scan-pages.ts';
import { wordRecall } from '../helpers/ocr-words.ts';

const run = promisify(execFile);
const status = await createOcrEngine().probe();
/** OCRmyPDF and Tesseract are system packages: CI installs them; elsewhere the suite says what is missing. */
const skip = !status.available && process.env.CI !== 'true' ? `OCR is not installed: ${status.detail ?? ''}` : false;

const ENGLISH = ['The quick brown fox jumps over the lazy dog', 'Invoice number 4711 was paid on Monday'];
const GERMAN = ['Größere Übungen für Straßenbahnfahrer', 'Die Bürgerinitiative grüßt äußerst höflich'];

/** Every word of `lines` is in `text`, as often as `lines` has it. */
function assertReads(text: string, lines: readonly string[]): void {
  assert.deepEqual(wordRecall(lines.join(' '), text).missing, [], `read: ${JSON.stringify(text)}`);
}

async function pdfText(path: string): Promise<string> {
  return (await run('pdftotext', ['-layout', path, '-'])).stdout;
}

describe('OCR over HTTP', { skip }, () => {
  let daemon: DaemonHandle;
  let dir: string;
  let english: Buffer;
  let german: Buffer;
  let scan: Buffer;
  before(async () => {
    [daemon, dir, english, german] = await Promise.all([startDaemon(), mkdtemp(join(tmpdir(), 'convd-ocr-api-')), scannedLines(ENGLISH), scannedLines(GERMAN)]);
    scan = await scannedPdf(english);
  });
  after(async () => {
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function converted(client: Client, fields: Record<string, string>, file: { data: Buffer; name: string }): Promise<{ done: PublicConversion; path: string }> {
    const got = await submitFile(client, { wait: '30', ...fields }, file);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
    const fetched = await download(client, got.body.id);
    assert.equal(fetched.status, 200);
    const path = join(dir, `${got.body.id}.${fields.target}`);
    await writeFile(path, fetched.bytes);
    return { done: got.body, path };
  }

  it('the formats listing offers OCR with the installed languages, and says what ocr=true costs', async () => {
    const got = await call<FormatDetails>(daemon, '/formats/pdf');
    assert.equal(got.status, 200);
    const toPdf = got.body.data.find((d) => d.target === 'pdf')!;
    const option = (name: string) => toPdf.options.find((o) => o.name === name);
    assert.equal(option('ocr')?.type, 'bool');
    assert.match(option('ocr')!.label, /\(credit weight 3 instead of 1\)$/);
    assert.deepEqual(option('ocr_mode')?.values, ['skip', 'redo', 'force']);
    assert.deepEqual(option('ocr_mode')?.requires, ['ocr']);
    assert.match(option('language')!.label, /deu, eng are installed/);
    const png = await call<FormatDetails>(daemon, '/formats/png');
    assert.equal(png.body.data.find((d) => d.target === 'txt')?.credit_weight, 3, 'an image read by OCR is an ocr conversion');
  });

  it('a scanned PDF to txt is read by OCR without being asked, charged as pdf -> txt; ocr=true charges OCR', async () => {
    const client = await newAccount(daemon, 'free');
    const auto = await converted(client, { target: 'txt' }, { data: scan, name: 'scan.pdf' });
    assertReads(await readFile(auto.path, 'utf8'), ENGLISH);
    assert.equal(auto.done.credits, 2, 'the document weight of pdf -> txt');
    const forced = await converted(client, { target: 'txt', ocr: 'true' }, { data: scan, name: 'scan.pdf' });
    assertReads(await readFile(forced.path, 'utf8'), ENGLISH);
    assert.equal(forced.done.credits, 3, 'the ocr weight');
  });

  it('pdf -> pdf with ocr=true: a searchable PDF, then the other operations; the page image kept', async () => {
    const client = await newAccount(daemon, 'free');
    const german2 = await scannedPdf(german, 2);
    const { done, path } = await converted(client, { target: 'pdf', ocr: 'true', language: 'deu', page_numbers: 'Seite {n}' }, { data: german2, name: 'brief.pdf' });
    assert.equal(done.credits, 3);
    const text = await pdfText(path);
    assertReads(text, GERMAN);
    assert.match(text, /Seite 2/, 'the page numbers came after the OCR');
    const images = (await run('pdfimages', ['-list', path])).stdout;
    const sizes = images.split('\n').slice(2).filter(Boolean).map((line) => line.trim().split(/\s+/).slice(3, 5).join('x'));
    const source = await (await import('sharp')).default(german).metadata();
    assert.deepEqual(sizes, [`${source.width}x${source.height}`, `${source.width}x${source.height}`], 'each page keeps its image');
  });

  it('pdf -> pdf with ocr=true and pdfa=2b: the searchable PDF made PDF/A afterwards', async () => {
    const client = await newAccount(daemon, 'free');
    const { path } = await converted(client, { target: 'pdf', ocr: 'true', pdfa: '2b' }, { data: scan, name: 'scan.pdf' });
    assertReads(await pdfText(path), ENGLISH);
    assert.match((await readFile(path)).toString('latin1'), /pdfaid:part(="|>|=')2/, 'the XMP claims PDF/A-2');
  });

  it('png -> pdf with ocr=true (and a page size): the image engine makes the page, OCR reads it', async () => {
    const client = await newAccount(daemon, 'free');
    const { done, path } = await converted(client, { target: 'pdf', variant: 'a4', ocr: 'true' }, { data: english, name: 'note.jpg' });
    assert.equal(done.credits, 3);
    assertReads(await pdfText(path), ENGLISH);
    const info = (await run('pdfinfo', [path])).stdout;
    assert.match(info, /Page size:\s+(595\.\d+ x 841\.\d+|841\.\d+ x 595\.\d+) pts/, 'the variant reached the image engine: A4 (landscape for a wide picture)');
  });

  it('jpg -> txt in German with language=deu', async () => {
    const client = await newAccount(daemon, 'free');
    const { done, path } = await converted(client, { target: 'txt', language: 'deu' }, { data: german, name: 'zettel.jpg' });
    assert.equal(done.credits, 3);
    assertReads(await readFile(path, 'utf8'), GERMAN);
  });

  it('refused at submission: a language not installed, ocr_mode without ocr, OCR of a merge', async () => {
    const language = await submitFile(daemon, { target: 'pdf', ocr: 'true', language: 'klingon' }, { data: scan, name: 'scan.pdf' });
    assertFieldErrors(language, ['options.language']);
    const encrypted = await submitFile(daemon, { target: 'pdf', ocr: 'true', password: 'secret' }, { data: scan, name: 'scan.pdf' });
    assert.match(assertFieldErrors(encrypted, ['options.password'])['options.password']!.message, /remove the password first/);
    const mode = await submitFile(daemon, { target: 'pdf', ocr_mode: 'force' }, { data: scan, name: 'scan.pdf' });
    assert.equal(assertFieldErrors(mode, ['options.ocr_mode'])['options.ocr_mode']!.reason, 'requires_other');
    const body = new FormData();
    for (const [name, value] of Object.entries({ target: 'pdf', ocr: 'true' })) body.append(name, value);
    for (const name of ['a.pdf', 'b.pdf']) body.append('file', new Blob([scan]), name);
    const merged = await call<PublicConversion>(daemon, '/conversions', { method: 'POST', body });
    assert.match(assertFieldErrors(merged, ['options.ocr'])['options.ocr']!.message, /merge them first/);
  });

  it('a 50-page scan on the free plan (20 pages of OCR) is refused at submission, naming the cap; 20 pages are not', async () => {
    const client = await newAccount(daemon, 'free');
    const small = await scannedLines(['page']);
    const refused = await submitFile(client, { target: 'pdf', ocr: 'true' }, { data: await scannedPdf(small, 50), name: 'fifty.pdf' });
    assert.match(assertFieldErrors(refused, ['file']).file!.message, /50 pages; OCR reads at most 20 pages in one conversion on the Free plan/);
    const txt = await submitFile(client, { target: 'txt', ocr: 'true' }, { data: await scannedPdf(small, 50), name: 'fifty.pdf' });
    assert.match(assertFieldErrors(txt, ['file']).file!.message, /at most 20 pages/);
    const accepted = await submitFile(client, { target: 'pdf', ocr: 'true' }, { data: await scannedPdf(small, 20), name: 'twenty.pdf' });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await call(client, `/conversions/${accepted.body.id}`, { method: 'DELETE' });
  });
});

describe('OCR accepted, then run where it is not installed', { skip }, () => {
  it('fails in words, rather than making a PDF without its text or charging less', async () => {
    // The registry of a node without OCRmyPDF: pdf -> pdf offers no `ocr` there.
    const without = await FormatRegistry.create([createPdfOperationsEngine(), createOcrEngine({ env: { ...process.env, CONVD_OCRMYPDF_PATH: '/nonexistent/ocrmypdf' } })]);
    const withOcr = await FormatRegistry.create([createPdfOperationsEngine(), createOcrEngine()]);
    try {
      const record = { source: 'pdf', target: 'pdf', options: { ocr: true, page_numbers: '{n}' } };
      const failure = (() => {
        try {
          refuseOptionsNotOffered(without, record);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      assert.ok(failure instanceof ConversionFailure, String(failure));
      assert.equal(failure.code, 'conversion_failed');
      assert.match(failure.message, /^ocr: not offered for pdf -> pdf on this server now/);
      assert.equal(without.pairFor('pdf', 'pdf', record.options)?.engine, 'pdfops', 'without OCR the plain pair would have run');
      refuseOptionsNotOffered(withOcr, record);
      assert.deepEqual(withOcr.pairFor('pdf', 'pdf', record.options)?.steps?.map((step) => step.engine), ['ocr', 'pdfops']);
    } finally {
      await Promise.all([without.close(), withOcr.close()]);
    }
  });
});

describe('OCR from the CLI, in-process', { skip }, () => {
  it('conv convert scan.pdf --to pdf -O ocr=true -O language=deu writes a searchable PDF', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'convd-ocr-cli-'));
    try {
      await writeFile(join(dir, 'scan.pdf'), await scannedPdf(await scannedLines(GERMAN)));
      const env = cleanEnv({ XDG_CACHE_HOME: join(dir, 'cache'), XDG_CONFIG_HOME: join(dir, 'config') });
      const made = await spawnConv(['convert', 'scan.pdf', '--to', 'pdf', '-O', 'ocr=true', '-O', 'language=deu', '-o', 'searchable.pdf'], { cwd: dir, env, timeoutMs: 120_000 });
      assert.equal(made.code, 0, made.stderr);
      assertReads(await pdfText(join(dir, 'searchable.pdf')), GERMAN);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
