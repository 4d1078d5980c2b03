import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import { PDFArray, PDFBool, PDFDict, PDFDocument, PDFName, PDFOperator, PDFOperatorNames, rgb, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { rejectsWith } from '../helpers/failure.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { zipEntries } from '../helpers/zip-read.ts';
import { createPdfOperationsEngine } from '../../src/engines/pdfops/pdfops-engine.ts';
import { placeText } from '../../src/engines/pdfops/placement.ts';
import { runQpdf } from '../../src/engines/pdfops/qpdf.ts';
import type { EngineJob, EngineOutput } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';

const run = promisify(execFile);
const engine = createPdfOperationsEngine();
const status = await engine.probe();
const pairs = engine.pairs();
const operations = pairs.find((p) => p.target === 'pdf')!;

let dir: string;
let counter = 0;
const fixtures = new Map<string, string>();

/** Three letter pages with metadata and uncompressed streams, the way many tools write them. */
async function samplePdf(pages = 3): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle('Quarterly report');
  doc.setAuthor('Ada Lovelace');
  doc.setSubject('Numbers');
  doc.setKeywords(['q3', 'finance']);
  doc.setCreator('convd tests');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage([612, 792]);
    page.drawText(`Page ${p + 1} heading`, { x: 50, y: 740, size: 20, font });
    for (let line = 0; line < 30; line++) page.drawText(`Page ${p + 1}, line ${line + 1}: the same words again`, { x: 50, y: 700 - line * 16, size: 11, font });
  }
  return doc.save({ useObjectStreams: false });
}

/** A page covered by an opaque white rectangle: what is drawn under it cannot be seen. */
async function opaquePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([400, 400]);
  page.drawRectangle({ x: 0, y: 0, width: 400, height: 400, color: rgb(1, 1, 1) });
  const font = await doc.embedFont(StandardFonts.Helvetica);
  page.drawText('Opaque', { x: 20, y: 20, size: 12, font });
  return doc.save();
}

/**
 * A tagged PDF as an authoring tool writes one: a heading and a paragraph, each drawn inside
 * marked content (BDC with an MCID) that a structure element (H1, P under Document) points to.
 */
async function taggedPdf(shape: { title?: string; language?: string; embedded?: boolean } = {}): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const font = shape.embedded === false
    ? await doc.embedFont(StandardFonts.Helvetica)
    : await doc.embedFont(await readFile(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')), { subset: true });
  const page = doc.addPage([400, 300]);
  const { context } = doc;
  const [documentRef, headingRef, paragraphRef, rootRef] = [context.nextRef(), context.nextRef(), context.nextRef(), context.nextRef()];
  for (const [tag, mcid, text, y, size] of [['H1', 0, 'Accessible heading', 240, 20], ['P', 1, 'A paragraph of the tagged document.', 200, 11]] as const) {
    // BDC's operand is a dictionary, which pdf-lib writes as any object but leaves out of its operators' argument type.
    const properties = context.obj({ MCID: mcid }) as unknown as PDFName;
    page.pushOperators(PDFOperator.of(PDFOperatorNames.BeginMarkedContentSequence, [PDFName.of(tag), properties]));
    page.drawText(text, { x: 40, y, size, font });
    page.pushOperators(PDFOperator.of(PDFOperatorNames.EndMarkedContent));
  }
  context.assign(headingRef, context.obj({ Type: 'StructElem', S: 'H1', P: documentRef, Pg: page.ref, K: 0 }));
  context.assign(paragraphRef, context.obj({ Type: 'StructElem', S: 'P', P: documentRef, Pg: page.ref, K: 1 }));
  context.assign(documentRef, context.obj({ Type: 'StructElem', S: 'Document', P: rootRef, K: [headingRef, paragraphRef] }));
  context.assign(rootRef, context.obj({ Type: 'StructTreeRoot', K: documentRef, ParentTree: { Nums: [0, [headingRef, paragraphRef]] }, ParentTreeNextKey: 1 }));
  page.node.set(PDFName.of('StructParents'), context.obj(0));
  doc.catalog.set(PDFName.of('StructTreeRoot'), rootRef);
  doc.catalog.set(PDFName.of('MarkInfo'), context.obj({ Marked: true }));
  if (shape.title) doc.setTitle(shape.title);
  if (shape.language) doc.setLanguage(shape.language);
  return doc.save({ useObjectStreams: false });
}

/** A form with a filled text field and a ticked box on page 1. */
async function formPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.addPage([612, 792]);
  const form = doc.getForm();
  const name = form.createTextField('name');
  name.setText('Grace Hopper');
  name.addToPage(doc.getPage(0), { x: 50, y: 600, width: 250, height: 30 });
  const agree = form.createCheckBox('agree');
  agree.check();
  agree.addToPage(doc.getPage(0), { x: 50, y: 550, width: 20, height: 20 });
  return doc.save();
}

function job(inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${extra.target ?? 'pdf'}`), source: 'pdf', target: 'pdf',
    variant: 'compress', options, signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

/** Debian's qpdf command line, a reader independent of the WebAssembly qpdf convd runs (installed by .ci/run). */
const QPDF_CLI = existsSync('/usr/bin/qpdf') ? '/usr/bin/qpdf' : undefined;
const checked: string[] = [];

/**
 * `qpdf --check` on a PDF result: its structure and every stream decode without error (exit 0,
 * or 3 for warnings only, which are shown). Encrypted results are checked with their password.
 */
async function qpdfCheck(path: string, password?: string): Promise<void> {
  if (!QPDF_CLI) {
    assert.notEqual(process.env.CI, 'true', 'CI installs qpdf (.ci/run): the PDF operations are checked with it there');
    return;
  }
  const args = [...(password ? [`--password=${password}`] : []), '--check', path];
  const result = await run(QPDF_CLI, args).catch((error: { code: number; stdout: string; stderr: string }) => error);
  const said = `${result.stdout}${result.stderr}`;
  assert.ok(!('code' in result) || result.code === 3, `qpdf --check ${path}: ${said}`);
  assert.match(said, /No syntax or stream encoding errors found/, said);
  checked.push(path);
}

async function convert(inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): Promise<{ path: string; output: EngineOutput | void }> {
  const j = job(inputPath, options, extra);
  const output = await engine.convert(j);
  // Every PDF an operation writes passes qpdf's own check (a zip's parts are checked where they are read).
  if ((extra.target ?? 'pdf') === 'pdf' && !output?.archive) {
    const password = typeof options.encrypt_user_password === 'string' ? options.encrypt_user_password : undefined;
    await qpdfCheck(j.outputPath, password);
  }
  return { path: j.outputPath, output };
}

async function fails(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  const failure = await rejectsWith(promise, code);
  if (pattern) assert.match(failure.message, pattern);
}

async function write(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** Poppler's view of a PDF: pdfinfo's fields (with a user password when given). */
async function pdfinfo(path: string, password?: string, pages = false): Promise<Record<string, string>> {
  const args = [...(password ? ['-upw', password] : []), ...(pages ? ['-f', '1', '-l', '999'] : []), path];
  const { stdout } = await run('pdfinfo', args);
  return Object.fromEntries(stdout.split('\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')).trim(), l.slice(l.indexOf(':') + 1).trim()]));
}

/** Each page's text as pdftotext reads it. */
async function pageTexts(path: string, password?: string): Promise<string[]> {
  const { stdout } = await run('pdftotext', ['-q', '-enc', 'UTF-8', ...(password ? ['-upw', password] : []), path, '-']);
  return stdout.split('\f').slice(0, -1);
}

/** Share of a rendered page's pixels that are strongly red. */
async function redShare(path: string, page = 1): Promise<number> {
  const prefix = join(dir, `render-${++counter}`);
  await run('pdftoppm', ['-r', '36', '-f', String(page), '-l', String(page), '-png', '-singlefile', path, prefix]);
  const { data, info } = await sharp(`${prefix}.png`).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let red = 0;
  for (let i = 0; i < data.length; i += info.channels) if (data[i]! > 180 && data[i + 1]! < 90 && data[i + 2]! < 90) red++;
  return red / (info.width * info.height);
}

/** The box of a rendered page's strongly red pixels, in points (rendered at 72 dpi). */
async function redBox(path: string, page = 1): Promise<{ left: number; top: number; right: number; bottom: number; width: number; height: number }> {
  const prefix = join(dir, `render-${++counter}`);
  await run('pdftoppm', ['-r', '72', '-f', String(page), '-l', String(page), '-png', '-singlefile', path, prefix]);
  const { data, info } = await sharp(`${prefix}.png`).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let [left, top, right, bottom] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      const at = (y * info.width + x) * info.channels;
      if (data[at]! > 180 && data[at + 1]! < 90 && data[at + 2]! < 90) [left, top, right, bottom] = [Math.min(left, x), Math.min(top, y), Math.max(right, x + 1), Math.max(bottom, y + 1)];
    }
  }
  return { left, top, right, bottom, width: right - left, height: bottom - top };
}

/** Share of a rendered page's pixels that are dark (black text, or a transparency drawn black). */
async function darkShare(path: string, page = 1): Promise<number> {
  const prefix = join(dir, `render-${++counter}`);
  await run('pdftoppm', ['-r', '36', '-f', String(page), '-l', String(page), '-png', '-singlefile', path, prefix]);
  const { data, info } = await sharp(`${prefix}.png`).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let dark = 0;
  for (let i = 0; i < data.length; i += info.channels) if (data[i]! < 60 && data[i + 1]! < 60 && data[i + 2]! < 60) dark++;
  return dark / (info.width * info.height);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-pdfops-'));
  fixtures.set('pdf', await write('in.pdf', await samplePdf()));
  fixtures.set('five', await write('five.pdf', await samplePdf(5)));
  fixtures.set('opaque', await write('opaque.pdf', await opaquePdf()));
  fixtures.set('form', await write('form.pdf', await formPdf()));
  const encrypted = join(dir, 'encrypted.pdf');
  const result = await runQpdf(['--encrypt', 'open sesame', 'owner', '256', '--'], fixtures.get('pdf')!, encrypted, new AbortController().signal);
  assert.equal(result.code, 0, result.messages.join('\n'));
  fixtures.set('encrypted', encrypted);
});

after(async () => {
  if (QPDF_CLI) console.log(`pdf operations: ${checked.length} results passed qpdf --check`);
  await rm(dir, { recursive: true, force: true });
});

describe('pdf operations engine', () => {
  it('offers pdf -> pdf with its variants and every operation, and pdf -> json', () => {
    assert.ok(status.available, status.detail);
    assert.deepEqual(pairs.map((p) => `${p.source}->${p.target}`), ['pdf->pdf', 'pdf->json']);
    assert.deepEqual(operations.variants.map((v) => v.key), ['compress', 'linearize']);
    const names = operations.options.map((o) => o.name);
    for (const name of ['password', 'pages', 'rotate', 'flatten', 'watermark_text', 'stamp_text', 'page_numbers', 'title', 'pdfa', 'encrypt_user_password', 'permissions']) {
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
    }
    assert.ok(operations.options.filter((o) => o.name.includes('password')).every((o) => o.secret), 'passwords are secret');
  });

  it('options that need another, or exclude one, are refused at submission naming both', () => {
    const refused = validateOptions(operations, { watermark_opacity: 0.5, rotate_pages: '1', pdfa: '2b', encrypt_user_password: 'x', permissions: 'print' });
    assert.equal(refused.ok, false);
    if (refused.ok) return;
    assert.equal(refused.problems['options.watermark_opacity']?.reason, 'requires_other');
    assert.equal(refused.problems['options.rotate_pages']?.reason, 'requires_other');
    assert.equal(refused.problems['options.pdfa']?.reason, 'excludes_other');
    assert.equal(refused.problems['options.encrypt_user_password']?.reason, 'excludes_other');
    assert.equal(refused.problems['options.permissions'], undefined, 'an encryption password is there');
    const bad = validateOptions(operations, { pages: '3-1', page_numbers: 'page', watermark_text: 'x', watermark_color: 'red' });
    assert.equal(bad.ok, false);
    if (bad.ok) return;
    assert.deepEqual(Object.keys(bad.problems).sort(), ['options.page_numbers', 'options.pages', 'options.watermark_color']);
    // A pattern holds for the whole value.
    for (const [name, value] of [['pages', '1-2-3'], ['pages', '1e3'], ['split_ranges', '1,Infinity'], ['creation_date', '2024-01-01junk']] as const) {
      const partial = validateOptions(operations, { [name]: value, ...(name === 'split_ranges' ? {} : {}) });
      assert.equal(partial.ok, false, `${name}=${value}`);
    }
    const fine = validateOptions(operations, { pages: '3,1-2', rotate: '90', watermark_text: 'DRAFT', watermark_opacity: '0.3' });
    assert.ok(fine.ok);
    if (fine.ok) assert.deepEqual(fine.options, { pages: '3,1-2', rotate: '90', watermark_text: 'DRAFT', watermark_opacity: 0.3 }, 'no defaults added for what was not asked');
  });

  it('places text as the page is shown, whatever its /Rotate', () => {
    const extent = { width: 100, ascent: 10, descent: 2 };
    const centre = placeText({ x: 0, y: 0, width: 600, height: 800, rotation: 0 }, extent, 0, 'center', 24);
    assert.deepEqual([centre.x, centre.y, centre.angle], [250, 396, 0]);
    // Turned a quarter clockwise: the shown page is 800 wide, 600 high; text runs up the page's own y.
    const turned = placeText({ x: 0, y: 0, width: 600, height: 800, rotation: 90 }, extent, 0, 'bottom-left', 24);
    assert.deepEqual([turned.x, turned.y, turned.angle], [600 - 26, 24, 90]);
    const offset = placeText({ x: 100, y: 50, width: 600, height: 800, rotation: 0 }, extent, 0, 'top-right', 24);
    assert.deepEqual([offset.x, offset.y], [100 + 600 - 24 - 100, 50 + 800 - 24 - 10]);
  });
});

/** How each target's output is read back by a tool of its own. */
const READ_BACK: Record<string, (path: string) => Promise<void>> = {
  pdf: async (path) => assert.equal((await pdfinfo(path)).Pages, '3'),
  json: async (path) => assert.equal((JSON.parse(await readFile(path, 'utf8')) as { pages: number }).pages, 3),
};

describe('every pdfops pair converts, its output read back', () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const check = READ_BACK[pair.target];
      assert.ok(check, `no expectation for ${pair.target}: add one`);
      const progress: number[] = [];
      const { path } = await convert(fixtures.get(pair.source)!, {}, { target: pair.target, variant: pair.variants[0]?.key ?? null, onProgress: (p) => progress.push(p) });
      await check(path);
      assert.equal(progress.at(-1), 100);
    });
  }
});

describe('pdf -> pdf', () => {
  it('compress: smaller, same pages, metadata preserved', async () => {
    const { path } = await convert(fixtures.get('pdf')!);
    const [before, after] = [(await stat(fixtures.get('pdf')!)).size, (await stat(path)).size];
    assert.ok(after < before * 0.7, `${before} -> ${after} bytes`);
    const info = await pdfinfo(path);
    assert.equal(info.Pages, '3');
    assert.deepEqual([info.Title, info.Author, info.Subject, info.Keywords, info.Creator], ['Quarterly report', 'Ada Lovelace', 'Numbers', 'q3 finance', 'convd tests']);
    assert.match((await readFile(path)).toString('latin1'), /\/Type\s*\/ObjStm/, 'uses object streams');
  });

  it('linearize: a linearization dictionary first, same pages, metadata preserved', async () => {
    const { path } = await convert(fixtures.get('pdf')!, {}, { variant: 'linearize' });
    const head = (await readFile(path)).subarray(0, 1024).toString('latin1');
    assert.match(head, /<<\s*\/Linearized 1/);
    const info = await pdfinfo(path);
    assert.equal(info.Pages, '3');
    assert.equal(info.Optimized, 'yes');
    assert.equal(info.Author, 'Ada Lovelace');
  });

  it('pages: keeps and orders the pages asked for; a page the file lacks is input_invalid', async () => {
    const { path } = await convert(fixtures.get('five')!, { pages: '5,1-2' });
    const texts = await pageTexts(path);
    assert.deepEqual(texts.map((t) => /Page (\d) heading/.exec(t)?.[1]), ['5', '1', '2']);
    await fails(engine.convert(job(fixtures.get('pdf')!, { pages: '2-9' })), 'input_invalid', /not in this PDF/);
  });

  it('rotate: the pages asked for turn clockwise, the others stay', async () => {
    const { path } = await convert(fixtures.get('pdf')!, { rotate: '90', rotate_pages: '1,3' });
    const { stdout } = await run('pdfinfo', ['-f', '1', '-l', '3', path]);
    assert.deepEqual([...stdout.matchAll(/Page\s+\d+ rot:\s+(\d+)/g)].map((m) => m[1]), ['90', '0', '90']);
    const all = await convert(fixtures.get('pdf')!, { rotate: '180' });
    const info = await run('pdfinfo', ['-f', '1', '-l', '3', all.path]);
    assert.deepEqual([...info.stdout.matchAll(/Page\s+\d+ rot:\s+(\d+)/g)].map((m) => m[1]), ['180', '180', '180']);
  });

  it('flatten: no form fields are left, their values are drawn in the page', async () => {
    assert.notEqual((await pdfinfo(fixtures.get('form')!)).Form, 'none');
    const { path } = await convert(fixtures.get('form')!, { flatten: true });
    assert.equal((await pdfinfo(path)).Form, 'none');
    const doc = await PDFDocument.load(await readFile(path));
    assert.equal(doc.getForm().getFields().length, 0);
    assert.match((await pageTexts(path))[0]!, /Grace Hopper/);
  });

  it('watermark: its text on every page, under the content; a stamp over it', async () => {
    const { path } = await convert(fixtures.get('pdf')!, { watermark_text: 'CONFIDENTIAL DRAFT' });
    // PDFium reads text in the order it is drawn: the watermark first, before the page's own.
    const texts = await pdfPageTexts(path);
    assert.equal(texts.length, 3);
    for (const [index, text] of texts.entries()) assert.match(text.replace(/\s+/g, ' '), new RegExp(`^CONFIDENTIAL DRAFT ?Page ${index + 1} heading`));
    // /Contents as a reference to a list of streams (valid, and written by some tools): kept a list of streams.
    const indirect = await PDFDocument.load(await readFile(fixtures.get('pdf')!));
    for (const page of indirect.getPages()) {
      const contents = page.node.get(PDFName.of('Contents'));
      page.node.set(PDFName.of('Contents'), indirect.context.register(contents instanceof PDFArray ? contents : indirect.context.obj([contents!])));
    }
    const listed = await convert(await write('indirect-contents.pdf', await indirect.save()), { watermark_text: 'LISTED', stamp_text: 'OVER' });
    for (const text of await pdfPageTexts(listed.path)) assert.match(text.replace(/\s+/g, ' '), /^LISTED ?Page \d heading[\s\S]*OVER$/);
    const stamped = await pdfPageTexts((await convert(fixtures.get('pdf')!, { stamp_text: 'APPROVED' })).path);
    for (const text of stamped) assert.match(text.replace(/\s+/g, ' '), /again ?APPROVED$/, 'a stamp is drawn after the page');
    // Red marks on a page an opaque white rectangle covers: under it nothing shows, over it the mark does.
    const opaque = fixtures.get('opaque')!;
    const red = { watermark_color: '#ff0000', watermark_opacity: 1, watermark_font_size: 40 };
    const under = await convert(opaque, { watermark_text: 'UNDER', ...red });
    assert.equal(await redShare(under.path), 0, 'the watermark is hidden by the page');
    const over = await convert(opaque, { stamp_text: 'OVER', stamp_color: '#ff0000', stamp_font_size: 40 });
    const shown = await redShare(over.path);
    assert.ok(shown > 0.002, `the stamp shows over the page: ${shown}`);
    const bare = await convert(fixtures.get('pdf')!, { watermark_text: 'SEEN', ...red });
    const seen = await redShare(bare.path);
    assert.ok(seen > 0.002, `on a page with nothing opaque the watermark shows: ${seen}`);
  });

  it('an image watermark under the content, a stamp over it: transparency kept, placed and sized as asked, one image for every page', async () => {
    // A red disc on a transparent square: what is transparent must leave the page as it was.
    const disc = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200"><circle cx="100" cy="100" r="90" fill="#ff0000"/></svg>');
    const logo = await write('logo.png', await sharp(disc).png().toBuffer());
    const images = (option: string) => ({ markImages: { [option]: logo } });
    const opaque = fixtures.get('opaque')!;
    const under = await convert(opaque, { watermark_image: 'logo.png', watermark_opacity: 1 }, images('watermark_image'));
    assert.equal(await redShare(under.path), 0, 'the watermark is hidden by the page');
    const over = await convert(opaque, { stamp_image: 'logo.png', stamp_width: 50, stamp_position: 'top-right' }, images('stamp_image'));
    const box = await redBox(over.path);
    // 50 % of a 400 pt page is 200 pt, the disc 180 of the image's 200 px: 180 pt wide at 72 dpi, 24 pt from the top and right.
    assert.ok(Math.abs(box.width - 180) <= 4 && Math.abs(box.height - 180) <= 4, `the disc: ${JSON.stringify(box)}`);
    assert.ok(Math.abs(box.right - (400 - 24 - 10)) <= 4 && Math.abs(box.top - (24 + 10)) <= 4, `top right: ${JSON.stringify(box)}`);
    assert.equal(await darkShare(over.path), await darkShare(opaque), 'the transparent corners are not drawn black');
    // On every page of a three-page document: one image object, drawn on each page, its transparency as a soft mask.
    const marked = await convert(fixtures.get('pdf')!, { watermark_image: 'logo.png', watermark_opacity: 0.8, watermark_angle: 30 }, images('watermark_image'));
    // pdfimages -list: page, num, type, ..., object number (column 11).
    const rows = (await run('pdfimages', ['-list', marked.path])).stdout.split('\n').slice(2).filter((line) => line.trim() !== '').map((line) => line.trim().split(/\s+/));
    const table = rows.map((row) => row.join(' ')).join('\n');
    assert.deepEqual(rows.filter((row) => row[2] === 'image').map((row) => row[0]), ['1', '2', '3'], table);
    assert.deepEqual(rows.filter((row) => row[2] === 'smask').map((row) => row[0]), ['1', '2', '3'], table);
    assert.equal(new Set(rows.filter((row) => row[2] === 'image').map((row) => row[10])).size, 1, `one image object: ${table}`);
    for (let page = 1; page <= 3; page++) assert.ok(await redShare(marked.path, page) > 0, `page ${page} shows the watermark`);
    for (const [index, text] of (await pageTexts(marked.path)).entries()) assert.match(text, new RegExp(`Page ${index + 1} heading`));
  });

  it('an image mark that is no image, or larger than the pixel limit, is input_invalid naming the option', async () => {
    const notImage = await write('not-an-image.png', 'this is text');
    await fails(engine.convert(job(fixtures.get('pdf')!, { stamp_image: 'x.png' }, { markImages: { stamp_image: notImage } })), 'input_invalid', /stamp_image: the image cannot be read/);
    const small = createPdfOperationsEngine({ maxInputPixels: 10_000 });
    await small.probe();
    const big = await write('big.png', await sharp({ create: { width: 200, height: 200, channels: 3, background: '#00ff00' } }).png().toBuffer());
    await fails(small.convert(job(fixtures.get('pdf')!, { watermark_image: 'big.png' }, { markImages: { watermark_image: big } })), 'input_invalid', /watermark_image: .*pixel/i);
    await fails(engine.convert(job(fixtures.get('pdf')!, { watermark_image: 'gone.png' })), 'conversion_failed', /watermark_image: the file gone.png did not reach the engine/);
  });

  it('pdfua: a tagged PDF made PDF/UA-1, its tags kept, its title shown, pdfuaid in its XMP; marks drawn as artifacts', async () => {
    const tagged = await write('tagged.pdf', await taggedPdf({ title: 'Zugängliches Dokument', language: 'de-DE' }));
    const { path } = await convert(tagged, { pdfua: true, stamp_text: 'APPROVED', author: 'Grace Hopper' });
    assert.equal((await pdfinfo(path)).Tagged, 'yes');
    const xmp = (await run('pdfinfo', ['-meta', path])).stdout;
    assert.match(xmp, /<pdfuaid:part>1<\/pdfuaid:part>/);
    assert.match(xmp, /<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Zugängliches Dokument<\/rdf:li>/, 'the title in UTF-8');
    assert.match(xmp, /<rdf:li>Grace Hopper<\/rdf:li>/);
    const structure = (await run('pdfinfo', ['-struct-text', path])).stdout;
    assert.match(structure, /H1[\s\S]*"Accessible heading"[\s\S]*P[\s\S]*"A paragraph of the tagged document\."/, structure);
    assert.doesNotMatch(structure, /APPROVED/, 'the stamp is an artifact, outside the structure');
    assert.match((await pageTexts(path))[0]!, /APPROVED/, 'and drawn on the page');
    const doc = await PDFDocument.load(await readFile(path));
    const preferences = doc.catalog.lookup(PDFName.of('ViewerPreferences'), PDFDict);
    assert.equal(preferences.get(PDFName.of('DisplayDocTitle')), PDFBool.True);
    assert.equal(String(doc.catalog.get(PDFName.of('Lang'))), '(de-DE)');
  });

  it('pdfua refuses what cannot be PDF/UA, each saying what to give or do; the options that would drop the tags are refused at submission', async () => {
    await fails(engine.convert(job(fixtures.get('pdf')!, { pdfua: true })), 'input_invalid', /no tags .*docx -> pdf with pdf_ua=true/);
    const untitled = await write('untitled.pdf', await taggedPdf({ language: 'en' }));
    await fails(engine.convert(job(untitled, { pdfua: true })), 'input_invalid', /title.*option title/);
    const titled = await convert(untitled, { pdfua: true, title: 'Given here' });
    assert.match((await run('pdfinfo', ['-meta', titled.path])).stdout, /Given here/);
    const speechless = await write('no-language.pdf', await taggedPdf({ title: 'T' }));
    await fails(engine.convert(job(speechless, { pdfua: true })), 'input_invalid', /language.*document_language/);
    const spoken = await convert(speechless, { pdfua: true, document_language: 'en-GB' });
    assert.equal((await pdfinfo(spoken.path)).Tagged, 'yes');
    const bare = await write('helvetica.pdf', await taggedPdf({ title: 'T', language: 'en', embedded: false }));
    await fails(engine.convert(job(bare, { pdfua: true })), 'input_invalid', /every font embedded.*Helvetica/);
    const refused = validateOptions(operations, { pdfua: true, pages: '1', split_every: 1 });
    assert.equal(refused.ok, false);
    if (!refused.ok) {
      assert.deepEqual(Object.keys(refused.problems), ['options.pdfua']);
      assert.equal(refused.problems['options.pdfua']!.reason, 'excludes_other');
    }
    // A switch sent off (a form sends every box) asks for nothing: it neither excludes nor is excluded.
    assert.equal(validateOptions(operations, { pdfua: 'false', flatten: 'false', pages: '1' }).ok, true);
    assert.equal(validateOptions(operations, { pdfua: false, flatten: true }).ok, true);
    const tagged = await write('tagged-twice.pdf', await taggedPdf({ title: 'T', language: 'en' }));
    await fails(engine.convert(job(tagged, { pdfua: true }, { inputPaths: [tagged, tagged] })), 'input_invalid', /merged into one lose theirs/);
  });

  it('page numbers: "{n} / {total}" from the start asked for, at the foot of each page', async () => {
    const { path } = await convert(fixtures.get('pdf')!, { page_numbers: 'Seite {n} von {total}', page_numbers_start: 4 });
    const texts = await pageTexts(path);
    assert.deepEqual(texts.map((t) => /Seite \d+ von \d+/.exec(t)?.[0]), ['Seite 4 von 6', 'Seite 5 von 6', 'Seite 6 von 6']);
    const { stdout } = await run('pdftotext', ['-q', '-bbox', '-f', '1', '-l', '1', path, '-']);
    const word = /<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">Seite<\/word>/.exec(stdout);
    assert.ok(word, stdout.slice(0, 500));
    assert.ok(Number(word[2]) > 740, `near the foot of a 792 pt page: y ${word[2]}`);
    assert.ok(Math.abs(Number(word[1]) - 306) < 80, `about the middle: x ${word[1]}`);
  });

  it('a mark the font cannot draw is input_invalid naming the option and the character', async () => {
    await fails(engine.convert(job(fixtures.get('pdf')!, { stamp_text: 'OK 中' })), 'input_invalid', /stamp_text.*U\+4E2D/);
  });

  it('metadata: title, author, subject, keywords and creation date read back by pdfinfo', async () => {
    const { path } = await convert(fixtures.get('pdf')!, {
      title: 'Annual report – 2026', author: 'Grace Hopper', subject: 'Results', keywords: 'annual, results', creation_date: '2026-01-31T10:20:00Z',
    });
    const info = await pdfinfo(path);
    assert.deepEqual([info.Title, info.Author, info.Subject, info.Keywords], ['Annual report – 2026', 'Grace Hopper', 'Results', 'annual results']);
    assert.match(info.CreationDate ?? '', /Jan 31 10:20:00 2026/);
    const doc = await PDFDocument.load(await readFile(path), { updateMetadata: false });
    assert.deepEqual(doc.getKeywords(), 'annual results');
  });

  it('encrypt: AES-256 that nothing opens without the password, with the permissions asked for', async () => {
    const { path } = await convert(fixtures.get('pdf')!, { encrypt_user_password: 'p4ss word', permissions: 'print' });
    await assert.rejects(run('pdfinfo', [path]), /Incorrect password/);
    const info = await pdfinfo(path, 'p4ss word');
    assert.match(info.Encrypted ?? '', /yes \(print:yes copy:no change:no addNotes:no algorithm:AES-256\)/);
    assert.equal(info.Pages, '3');
    assert.match((await pageTexts(path, 'p4ss word'))[1]!, /Page 2 heading/);
    const qpdf = await runQpdf(['--decrypt'], path, join(dir, 'nope.pdf'), new AbortController().signal);
    assert.equal(qpdf.code, 2, 'qpdf cannot open it without the password');
    const opened = await runQpdf(['--password=p4ss word', '--decrypt'], path, join(dir, 'yes.pdf'), new AbortController().signal);
    assert.equal(opened.code, 0, opened.messages.join('\n'));
    if (QPDF_CLI) {
      // --requires-password: exit 0 when a password is needed to open it, 2 when it is not encrypted.
      const asked = await run(QPDF_CLI, ['--requires-password', path]).then(() => 0, (error: { code: number }) => error.code);
      assert.equal(asked, 0, 'Debian\'s qpdf finds a password needed');
      await assert.rejects(run(QPDF_CLI, ['--check', path]), /invalid password/);
    }
  });

  it('decrypt: the password opens an encrypted input; none or a wrong one is input_invalid saying so', async () => {
    const { path } = await convert(fixtures.get('encrypted')!, { password: 'open sesame' });
    const info = await pdfinfo(path);
    assert.equal(info.Encrypted, 'no');
    assert.equal(info.Title, 'Quarterly report');
    await fails(engine.convert(job(fixtures.get('encrypted')!, {})), 'input_invalid', /encrypted: give the password/);
    await fails(engine.convert(job(fixtures.get('encrypted')!, { password: 'wrong' })), 'input_invalid', /password does not open/);
  });

  it('pdfa: an XMP pdfaid part and conformance, every font embedded, the metadata kept', { skip: operations.options.some((o) => o.name === 'pdfa') ? false : 'no Ghostscript' }, async () => {
    const { path, output } = await convert(fixtures.get('pdf')!, { pdfa: '2b', author: 'Zoe [Unal]' });
    const text = (await readFile(path)).toString('latin1');
    assert.match(text, /pdfaid:part=['"]2['"]/);
    assert.match(text, /pdfaid:conformance=['"]B['"]/);
    const doc = await PDFDocument.load(await readFile(path), { updateMetadata: false });
    assert.ok(doc.catalog.has(PDFName.of('OutputIntents')), 'an output intent');
    const { stdout } = await run('pdffonts', [path]);
    const fonts = stdout.split('\n').slice(2).filter((l) => l.trim() !== '');
    assert.ok(fonts.length > 0);
    for (const font of fonts) assert.match(font, /\s+yes\s+yes\s+(yes|no)\s+\d+\s+\d+\s*$/, `embedded: ${font}`);
    const info = await pdfinfo(path);
    assert.deepEqual([info.Title, info.Author, info.Pages], ['Quarterly report', 'Zoe [Unal]', '3']);
    assert.equal(output?.warnings, undefined);
    const greek = await convert(fixtures.get('pdf')!, { pdfa: '1b', author: 'Zoë Ωμέγα' });
    const one = (await readFile(greek.path)).toString('latin1');
    assert.match(one, /pdfaid:part=['"]1['"]/);
    assert.match(one, /^%PDF-1\.4/, 'PDF/A-1 is PDF 1.4');
    assert.doesNotMatch(one, /\/Type\s*\/ObjStm/, 'PDF/A-1 has no object streams');
    assert.deepEqual(greek.output?.warnings?.map((w) => w.code), ['metadata_dropped']);
  });

  it('several operations at once run in their fixed order', async () => {
    const { path } = await convert(fixtures.get('five')!, {
      pages: '4-5', rotate: '90', watermark_text: 'COPY', page_numbers: '{n}/{total}', title: 'Two pages', encrypt_user_password: 'pw',
    }, { variant: 'linearize' });
    const info = await pdfinfo(path, 'pw');
    assert.equal(info.Pages, '2');
    assert.equal(info.Title, 'Two pages');
    assert.match(info.Encrypted ?? '', /AES-256/);
    const texts = await pageTexts(path, 'pw');
    assert.deepEqual(texts.map((t) => [/Page (\d) heading/.exec(t)?.[1], /\b(\d\/2)\b/.exec(t)?.[1]]), [['4', '1/2'], ['5', '2/2']]);
    const opened = join(dir, 'several-opened.pdf');
    assert.equal((await runQpdf(['--password=pw', '--decrypt'], path, opened, new AbortController().signal)).code, 0);
    for (const text of await pdfPageTexts(opened)) assert.match(text.replace(/\s+/g, ''), /^COPY/);
  });

  it('split_every: a zip of parts of that many pages, each a PDF pdfinfo reads; one part is the PDF itself', async () => {
    const { path, output } = await convert(fixtures.get('five')!, { split_every: 2, encrypt_user_password: 'pw' });
    assert.equal(output?.archive, true);
    const entries = await zipEntries(await readFile(path));
    // Named by their pages, zero-padded to the page count's digits (sorted, they are in order).
    assert.deepEqual(entries.map((e) => e.name), ['pages-1-2.pdf', 'pages-3-4.pdf', 'pages-5.pdf']);
    const headings: string[][] = [];
    for (const [index, entry] of entries.entries()) {
      const part = await write(`part-${index}.pdf`, entry.bytes);
      await qpdfCheck(part, 'pw');
      assert.match((await pdfinfo(part, 'pw')).Encrypted ?? '', /AES-256/, 'each part is encrypted as the whole would be');
      headings.push((await pageTexts(part, 'pw')).map((t) => /Page (\d) heading/.exec(t)?.[1] ?? '?'));
    }
    assert.deepEqual(headings, [['1', '2'], ['3', '4'], ['5']]);
    const whole = await convert(fixtures.get('pdf')!, { split_every: 10 });
    assert.equal(whole.output?.archive, undefined);
    assert.equal((await pdfinfo(whole.path)).Pages, '3');
  });

  it('split_ranges: one PDF per range, in the order given; a range past the end is input_invalid', async () => {
    const { path, output } = await convert(fixtures.get('five')!, { split_ranges: '4-5,1,2-3' });
    assert.equal(output?.archive, true);
    const entries = await zipEntries(await readFile(path));
    assert.deepEqual(entries.map((e) => e.name), ['pages-4-5.pdf', 'pages-1.pdf', 'pages-2-3.pdf']);
    const headings = [];
    for (const [index, entry] of entries.entries()) headings.push((await pageTexts(await write(`range-${index}.pdf`, entry.bytes))).map((t) => /Page (\d) heading/.exec(t)?.[1]));
    assert.deepEqual(headings, [['4', '5'], ['1'], ['2', '3']]);
    await fails(engine.convert(job(fixtures.get('pdf')!, { split_ranges: '1,3-4' })), 'input_invalid', /not in this PDF/);
  });

  it('a merge opens each encrypted file with the password, the first as well; a split past the output cap stops', async () => {
    const { path } = await convert(fixtures.get('encrypted')!, { password: 'open sesame', title: 'Merged' }, { inputPaths: [fixtures.get('encrypted')!, fixtures.get('five')!] });
    assert.equal((await pdfinfo(path)).Pages, '8');
    const size = (await stat(fixtures.get('five')!)).size;
    await fails(engine.convert(job(fixtures.get('five')!, { split_ranges: '1-5,1-5,1-5,1-5' }, { maxOutputBytes: size * 2 })), 'conversion_failed', /larger than its limit/);
  });

  it('a PDF with a broken xref, a truncated PDF and a PNG named .pdf are input_invalid', async () => {
    const original = await readFile(fixtures.get('pdf')!);
    const text = original.toString('latin1');
    const shifted = text.replace(/(\d{10}) 00000 n/g, (_, offset: string) => `${String(Number(offset) + 7).padStart(10, '0')} 00000 n`);
    assert.notEqual(shifted, text);
    await fails(engine.convert(job(await write('broken-xref.pdf', Buffer.from(shifted, 'latin1')))), 'input_invalid', /not a readable PDF|damaged/);
    await fails(engine.convert(job(await write('cut.pdf', original.subarray(0, original.length >> 1)))), 'input_invalid');
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).png().toBuffer();
    await fails(engine.convert(job(await write('image.pdf', png))), 'input_invalid');
    await fails(engine.convert(job(await write('image2.pdf', png), {}, { target: 'json' })), 'input_invalid');
  });

  it('a cancelled rewrite stops qpdf and rejects with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    controller.abort(reason);
    await assert.rejects(engine.convert(job(fixtures.get('pdf')!, {}, { signal: controller.signal })), (e) => e === reason);
    const running = new AbortController();
    const conversion = engine.convert(job(fixtures.get('pdf')!, {}, { signal: running.signal, variant: 'linearize' }));
    setImmediate(() => running.abort(reason));
    await assert.rejects(conversion, (e) => e === reason);
  });
});

describe('pdf -> json', () => {
  it('pages, their sizes and turns, the document information, encryption, fields and PDF/A', async () => {
    const turned = await convert(fixtures.get('pdf')!, { rotate: '90', rotate_pages: '2' });
    const { path } = await convert(turned.path, {}, { target: 'json' });
    const facts = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    assert.equal(facts.pages, 3);
    assert.deepEqual(facts.page_sizes, [
      { page: 1, width: 612, height: 792, rotation: 0 },
      { page: 2, width: 792, height: 612, rotation: 90 },
      { page: 3, width: 612, height: 792, rotation: 0 },
    ]);
    assert.deepEqual([facts.title, facts.author, facts.keywords, facts.encrypted, facts.form_fields, facts.pdfa], ['Quarterly report', 'Ada Lovelace', 'q3 finance', false, 0, null]);
    assert.match(String(facts.pdf_version), /^1\.\d$/);
    const form = JSON.parse(await readFile((await convert(fixtures.get('form')!, {}, { target: 'json' })).path, 'utf8')) as Record<string, unknown>;
    assert.equal(form.form_fields, 2);
  });

  it('an encrypted PDF is read with its password, and says it was encrypted', async () => {
    const { path } = await convert(fixtures.get('encrypted')!, { password: 'open sesame' }, { target: 'json' });
    const facts = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    assert.deepEqual([facts.pages, facts.title, facts.encrypted], [3, 'Quarterly report', true]);
    await fails(engine.convert(job(fixtures.get('encrypted')!, {}, { target: 'json' })), 'input_invalid', /encrypted/);
  });
});
