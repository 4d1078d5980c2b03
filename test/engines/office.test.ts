/**
 * The office engine with the real LibreOffice: every pair it offers converts a fixture LibreOffice
 * itself made (test/helpers/office-fixtures.py), each output opened again and its text or cells
 * read back; the PDF options do what they say; hostile documents fail cleanly and fetch or read
 * nothing; the pool runs one document per instance, survives a killed instance and a hung one,
 * and leaves no process or profile behind. Under CI (CI=true) a missing LibreOffice is a failure.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { PDFDict, PDFDocument, PDFName } from 'pdf-lib';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { officeRetries } from '../../src/engines/office/retries.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import { waitFor } from '../helpers/engines-proc.ts';
import { billionLaughsDocx, docxOf, storedZip } from '../helpers/hostile-files.ts';
import { assertOfficeOutput, makeOfficeFixtures, OFFICE_CSV, OFFICE_MARKER } from '../helpers/office.ts';
import { word6Doc, WORD6_TEXT } from '../helpers/old-office.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';

const INSTANCES = 2;

/** Whether the kernel has Landlock (the version its syscall gives, 1 or more). */
function landlockAvailable(python: string): boolean {
  const script = 'import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))';
  return Number(execFileSync(python, ['-c', script], { encoding: 'utf8' }).trim()) >= 1;
}

/** Images drawn on a PDF's pages. */
async function imagesIn(path: string): Promise<number> {
  const pdf = await PDFDocument.load(await readFile(path));
  return pdf.getPages().reduce((sum, page) => sum + (page.node.Resources()?.lookupMaybe(PDFName.of('XObject'), PDFDict)?.keys().length ?? 0), 0);
}

const office = await findOffice(process.env);
const required = process.env.CI === 'true';
const skip = office.ready || required ? false : `LibreOffice is not installed here: ${office.problem}`;
/** Outside every directory LibreOffice is left to read (confine.py): the repository's scratch directory. */
const OUTSIDE_ROOT = fileURLToPath(new URL('../../.scratch/', import.meta.url));
/** Why the confinement cannot be shown here: a kernel without Landlock, or a repository inside the temp directory. */
const unconfinable = !office.ready ? false
  : !landlockAvailable(office.python) ? 'the kernel has no Landlock: LibreOffice runs unconfined here'
    : [tmpdir(), '/tmp'].some((root) => OUTSIDE_ROOT.startsWith(`${root}/`)) ? `the repository is in the temp directory, which LibreOffice may read (${OUTSIDE_ROOT})` : false;

/** LibreOffice's business card template, as this LibreOffice ships it: every word in frames holding tables. */
const BUSINESS_CARD = join(dirname(dirname(office.ready ? office.sofficeBin : '')), 'share/template/common/offimisc/Businesscard-with-logo.ott');

/** The engine as the registry gets it, probed here: its pairs are those of this machine's LibreOffice. */
const engine = createOfficeEngine();
const status = await engine.probe();
const pairs = engine.pairs();
let dir: string;
let counter = 0;
const proven = new Set<string>();

before(async () => {
  if (!office.ready) {
    if (required) assert.fail(`CI=true: the document suites must not skip, but ${office.problem}`);
    return;
  }
  assert.ok(status.available, status.detail);
  dir = await mkdtemp(join(tmpdir(), 'convd-officetest-'));
  await makeOfficeFixtures(office, dir);
  await writeFile(join(dir, 'fixture.csv'), OFFICE_CSV);
});

after(async () => {
  await engine.close?.();
  if (dir) {
    console.log(`office engine: ${proven.size} of ${pairs.length} pairs proven`);
    await rm(dir, { recursive: true, force: true });
  }
});

function defaults(pair: ConversionPair, raw: Record<string, unknown> = {}): EngineJob['options'] {
  const outcome = validateOptions(pair, raw);
  assert.ok(outcome.ok, JSON.stringify(!outcome.ok && outcome.problems));
  return outcome.options;
}

function pairOf(source: string, target: string): ConversionPair {
  const pair = pairs.find((p) => p.source === source && p.target === target);
  assert.ok(pair, `${source} -> ${target} is offered`);
  return pair;
}

/** A job for `input` with the pair's first variant and its options' defaults (and `raw`), written to a new file in `dir`. */
function jobOf(input: string, source: string, target: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): EngineJob {
  const pair = pairOf(source, target);
  return {
    inputPath: input, outputPath: join(dir, `out-${++counter}.${target}`), source, target,
    variant: pair.variants[0]?.key ?? null, options: defaults(pair, raw), signal: new AbortController().signal,
    onProgress: () => undefined, ...extra,
  };
}

async function convert(input: string, source: string, target: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): Promise<string> {
  const job = jobOf(input, source, target, raw, extra);
  await engine.convert(job);
  return job.outputPath;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a failure');
}

/** Checks an output by opening it again: the fixture's marker must be in it. */
async function assertOutput(pair: ConversionPair, output: string): Promise<void> {
  assert.ok(office.ready);
  await assertOfficeOutput(office, pair.source, pair.target, output);
}

describe('office engine: what it offers', { skip }, () => {
  it('offers text, spreadsheet and presentation formats to pdf and to their own family', () => {
    const keys = new Set(pairs.map((p) => `${p.source}->${p.target}`));
    for (const key of ['docx->pdf', 'doc->docx', 'odt->rtf', 'rtf->txt', 'xlsx->ods', 'xls->csv', 'csv->xlsx', 'ods->pdf', 'pptx->odp', 'ppt->pdf', 'odp->pptx']) assert.ok(keys.has(key), key);
    assert.ok(!keys.has('docx->xlsx') && !keys.has('pptx->docx') && !keys.has('docx->docx'));
    for (const pair of pairs) assert.equal(pair.kind, 'document');
  });

  it('templates and flat OpenDocument files convert as their family; drawings to pdf, png, svg and odg', () => {
    const keys = new Set(pairs.map((p) => `${p.source}->${p.target}`));
    for (const key of [
      'ott->pdf', 'ott->docx', 'dotx->odt', 'dot->pdf', 'fodt->txt', 'ots->xlsx', 'xltx->csv', 'xlt->pdf', 'fods->ods',
      'otp->pptx', 'potx->pdf', 'pot->odp', 'fodp->pdf', 'odg->pdf', 'odg->png', 'otg->svg', 'fodg->odg',
    ]) assert.ok(keys.has(key), key);
    assert.ok(!keys.has('ott->xlsx') && !keys.has('odg->docx') && !keys.has('odg->odg') && !keys.has('ott->ott'));
    assert.ok(!pairOf('odg', 'pdf').options.some((o) => o.name === 'landscape' || o.name === 'export_notes'), 'a drawing has the page it was drawn on');
  });

});

describe('office engine: every pair', { skip, concurrency: 2 }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const fixture = join(dir, `fixture.${pair.source}`);
      assert.ok(existsSync(fixture), `no fixture for ${pair.source}: add one to test/helpers/office-fixtures.py`);
      const output = await convert(fixture, pair.source, pair.target);
      await assertOutput(pair, output);
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

describe('office engine: pdf options', { skip }, () => {
  it('pages: a range and a list of the three pages', async () => {
    const pdfPages = async (pages: string) => (await PDFDocument.load(await readFile(await convert(join(dir, 'pages.docx'), 'docx', 'pdf', { pages })))).getPageCount();
    assert.equal(await pdfPages('2'), 1);
    assert.equal(await pdfPages('2-3'), 2);
    assert.equal(await pdfPages('1,3'), 2);
  });

  it('landscape turns the pages', async () => {
    const size = async (raw: Record<string, unknown>) => {
      const page = (await PDFDocument.load(await readFile(await convert(join(dir, 'fixture.docx'), 'docx', 'pdf', raw)))).getPage(0);
      return page.getWidth() > page.getHeight() ? 'landscape' : 'portrait';
    };
    assert.equal(await size({}), 'portrait');
    assert.equal(await size({ landscape: true }), 'landscape');
  });

  it('PDF/A variants and PDF/UA say so in the document metadata', async () => {
    for (const [variant, part] of [['pdfa-1b', 1], ['pdfa-2b', 2], ['pdfa-3b', 3]] as const) {
      const pair = pairOf('odt', 'pdf');
      const job: EngineJob = {
        inputPath: join(dir, 'fixture.odt'), outputPath: join(dir, `out-${++counter}.pdf`), source: 'odt', target: 'pdf', variant,
        options: defaults(pair), signal: new AbortController().signal, onProgress: () => undefined,
      };
      await engine.convert(job);
      assert.match((await readFile(job.outputPath)).toString('latin1'), new RegExp(`pdfaid:part>${part}<|pdfaid:part="${part}"`), variant);
    }
    const tagged = (await readFile(await convert(join(dir, 'fixture.odt'), 'odt', 'pdf', { pdf_ua: true }))).toString('latin1');
    assert.match(tagged, /pdfuaid:part/);
    assert.match(tagged, /\/StructTreeRoot/);
  });

  it('a password opens a protected document; without it, or a wrong one, input_invalid that says so', async () => {
    const protectedOdt = join(dir, 'protected.odt');
    const output = await convert(protectedOdt, 'odt', 'pdf', { password: 'sesame' });
    assert.equal((await PDFDocument.load(await readFile(output))).getPageCount(), 1);
    const none = await failure(convert(protectedOdt, 'odt', 'pdf'));
    assert.ok(none instanceof ConversionFailure);
    assert.equal(none.code, 'input_invalid');
    assert.match(none.message, /password/);
    const wrong = await failure(convert(join(dir, 'protected.ods'), 'ods', 'csv', { password: 'open sesame' }));
    assert.ok(wrong instanceof ConversionFailure && wrong.code === 'input_invalid', String(wrong));
    assert.match((wrong as ConversionFailure).message, /password given/);
  });

  it('a page range or a password that is not one is refused by the options check', () => {
    const pair = pairOf('docx', 'pdf');
    assert.equal(validateOptions(pair, { pages: '1-3;rm -rf' }).ok, false);
    assert.equal(validateOptions(pair, { pages: 5 }).ok, false);
    assert.equal(validateOptions(pair, { password: 'x'.repeat(300) }).ok, false);
    assert.equal(pair.options.find((o) => o.name === 'password')?.secret, true);
  });
});

describe('office engine: html', { skip }, () => {
  it('an xlsx of two sheets -> html: one page, every sheet a table with its cells; presentations have no html', async () => {
    const cell = (text: string) => `<table:table-cell office:value-type="string"><text:p>${text}</text:p></table:table-cell>`;
    const sheet = (name: string, text: string) => `<table:table table:name="${name}"><table:table-row>${cell(text)}${cell('&lt;b&gt;not bold&lt;/b&gt;')}</table:table-row></table:table>`;
    const fods = join(dir, 'two-sheets.fods');
    await writeFile(fods, `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet">
<office:body><office:spreadsheet>${sheet('First', 'FIRST-SHEET-CELL')}${sheet('Second', 'SECOND-SHEET-CELL')}</office:spreadsheet></office:body></office:document>`);
    const xlsx = await convert(fods, 'fods', 'xlsx');
    const html = (await readFile(await convert(xlsx, 'xlsx', 'html'))).toString('utf8');
    assert.match(html, /^<!DOCTYPE html>/i);
    assert.equal(html.match(/<table[\s>]/g)?.length, 2, 'a table per sheet');
    assert.ok(html.indexOf('FIRST-SHEET-CELL') >= 0 && html.indexOf('FIRST-SHEET-CELL') < html.indexOf('SECOND-SHEET-CELL'), 'both sheets, in order');
    assert.match(html, /&lt;b&gt;not bold&lt;\/b&gt;/, 'a cell\'s text is escaped');
    for (const source of ['pptx', 'ppt', 'odp']) assert.ok(!pairs.some((p) => p.source === source && p.target === 'html'), `no ${source} -> html`);
  });
});

describe('office engine: txt', { skip }, () => {
  it('the words of text boxes and frames are in the text, after the paragraph they are anchored in (Writer\'s export leaves them out)', async () => {
    const W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:v="urn:schemas-microsoft-com:vml"';
    const p = (text: string) => `<w:p><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const textBox = (...lines: string[]) => `<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:inline><wp:extent cx="2000000" cy="600000"/><wp:docPr id="1" name="Box"/><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp><wps:cNvSpPr txBox="1"/><wps:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="2000000" cy="600000"/></a:xfrm><a:prstGeom prst="rect"/></wps:spPr><wps:txbx><w:txbxContent>${lines.map(p).join('')}</w:txbxContent></wps:txbx><wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:inline></w:drawing></mc:Choice><mc:Fallback><w:pict><v:rect><v:textbox><w:txbxContent>${lines.map(p).join('')}</w:txbxContent></v:textbox></v:rect></w:pict></mc:Fallback></mc:AlternateContent></w:r>`;
    const docx = join(dir, 'text-box.docx');
    await writeFile(docx, docxOf(`<w:document ${W_NS}><w:body>${p('BODY-BEFORE')}<w:p>${textBox('BOX-NAME', 'BOX-STREET')}</w:p>${p('BODY-AFTER')}</w:body></w:document>`));
    const fromDocx = (await readFile(await convert(docx, 'docx', 'txt'), 'utf8')).replace(/^\uFEFF/, '');
    const order = ['BODY-BEFORE', 'BOX-NAME', 'BOX-STREET', 'BODY-AFTER'].map((words) => fromDocx.indexOf(words));
    assert.ok(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!)), `in order: ${JSON.stringify(fromDocx)}`);
    assert.equal(fromDocx.split('BOX-NAME').length, 2, 'once');

    const fodt = join(dir, 'frame.fodt');
    await writeFile(fodt, `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text">
<office:body><office:text><text:p>BODY-FIRST<draw:frame draw:name="Card" text:anchor-type="paragraph" svg:width="6cm" svg:height="3cm"><draw:text-box><text:p>FRAME-TITLE</text:p><table:table table:name="T"><table:table-column/><table:table-column/><table:table-row><table:table-cell><text:p>CELL-A</text:p></table:table-cell><table:table-cell><text:p>CELL-B</text:p></table:table-cell></table:table-row></table:table></draw:text-box></draw:frame></text:p><text:p>BODY-LAST</text:p></office:text></office:body></office:document>`);
    const fromFodt = (await readFile(await convert(fodt, 'fodt', 'txt'), 'utf8')).replace(/^\uFEFF/, '');
    const inFrame = ['BODY-FIRST', 'FRAME-TITLE', 'CELL-A', 'CELL-B', 'BODY-LAST'].map((words) => fromFodt.indexOf(words));
    assert.ok(inFrame.every((at, i) => at >= 0 && (i === 0 || at > inFrame[i - 1]!)), `in order, the frame's table too: ${JSON.stringify(fromFodt)}`);
  });

  it('a template is opened as the file it is: LibreOffice\'s business card, open 1.5 s as on a busy box, converts on its instance', async () => {
    // Made into a new document, the card's sections linked to its "MasterLabel" aborted soffice
    // from a timer within a second: its txt (the frames' words gathered, a moment more) went the
    // second way, which knows no frames.
    const held = join(dir, 'slow-business-card.ott');
    await writeFile(held, await readFile(BUSINESS_CARD));
    const slow = createOfficeEngine({ instances: 1, faultsForTests: { slowBeforeStore: 'slow-' } });
    await slow.probe();
    try {
      const before = officeRetries();
      const job = jobOf(held, 'ott', 'txt');
      await slow.convert(job);
      const text = await readFile(job.outputPath, 'utf8');
      for (const words of ['profession', 'GSM:', 'Designed by Edmund Laugasson']) assert.ok(text.includes(words), `${words} in ${JSON.stringify(text)}`);
      assert.deepEqual(officeRetries(), before, 'no second way');
    } finally {
      await slow.close?.();
    }
  });
});

describe('office engine: hostile documents fail cleanly, read and fetch nothing', { skip }, () => {
  let server: Server;
  let requests = 0;

  before(async () => {
    server = createServer((req, res) => {
      requests++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(() => new Promise<void>((resolve) => server?.close(() => resolve())));

  async function expectInvalid(name: string, bytes: Buffer, source: string): Promise<void> {
    const path = join(dir, name);
    await writeFile(path, bytes);
    const error = await failure(convert(path, source, 'pdf'));
    assert.ok(error instanceof ConversionFailure, String(error));
    assert.equal(error.code, 'input_invalid', error.message);
  }

  it('a docx that is a zip of random bytes, a truncated xlsx, a "billion laughs" entity bomb', async () => {
    const { randomBytes } = await import('node:crypto');
    await expectInvalid('random.docx', storedZip('word/document.xml', randomBytes(4096)), 'docx');
    const xlsx = await readFile(join(dir, 'fixture.xlsx'));
    await expectInvalid('truncated.xlsx', xlsx.subarray(0, xlsx.length >> 1), 'xlsx');
    await expectInvalid('laughs.docx', billionLaughsDocx(), 'docx');
  });

  it("a Word 6 .doc, which the '97 filter refuses, converts with LibreOffice's own filter for it; a damaged .doc fails as damaged", async () => {
    const word6 = join(dir, 'word6.doc');
    await writeFile(word6, word6Doc());
    assert.match((await pdfPageTexts(await convert(word6, 'doc', 'pdf'))).join('\n'), new RegExp(WORD6_TEXT));
    const { randomBytes } = await import('node:crypto');
    const doc = await readFile(join(dir, 'fixture.doc'));
    for (const [name, bytes] of [['random.doc', randomBytes(8192)], ['truncated.doc', doc.subarray(0, 1024)]] as const) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      const error = await failure(convert(path, 'doc', 'pdf'));
      assert.ok(error instanceof ConversionFailure && error.code === 'input_invalid', String(error));
      assert.match(error.message, /damaged, not a doc file, or protected by a password/);
    }
  });

  it('a .doc or .xls that is another format Word and Excel open converts as what it is: Office 2003 XML, text (UTF-8 or Windows-1252; a sheet\'s cells split by tab, semicolon or comma)', async () => {
    const files: [string, string | Buffer, string, string][] = [
      ['word2003.doc', [
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>', '<?mso-application progid="Word.Document"?>',
        '<w:wordDocument xmlns:w="http://schemas.microsoft.com/office/word/2003/wordml"><w:body><w:p><w:r><w:t>Word 2003 body text.</w:t></w:r></w:p></w:body></w:wordDocument>',
      ].join('\n'), 'txt', 'Word 2003 body text.\n'],
      ['spreadsheet2003.xls', [
        '<?xml version="1.0"?>', '<?mso-application progid="Excel.Sheet"?>',
        '<Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet" xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet"><Worksheet ss:Name="Data"><Table>',
        '<Row><Cell><Data ss:Type="String">Name</Data></Cell><Cell><Data ss:Type="String">Qty</Data></Cell></Row>',
        '<Row><Cell><Data ss:Type="String">Pear</Data></Cell><Cell><Data ss:Type="Number">7</Data></Cell></Row>',
        '</Table></Worksheet></Workbook>',
      ].join('\n'), 'csv', 'Name,Qty\nPear,7\n'],
      ['notes.doc', 'The Python Debugger Pdb\n=======================\n\n        >>> import pdb — naïve\n', 'txt', 'The Python Debugger Pdb\n=======================\n\n        >>> import pdb — naïve\n'],
      ['latin.doc', Buffer.from('Fran\xe7ois Pinard\n', 'latin1'), 'txt', 'François Pinard\n'],
      ['export.xls', 'Name\tQty\nPlum\t9\n', 'csv', 'Name,Qty\nPlum,9\n'],
      // LibreOffice's detection calls this one a WordPerfect document: text is told by its bytes.
      ['export-utf8.xls', 'Name\tCity\tScore\nZoë\tKöln\t12\nLi\tParis\t7\n', 'csv', 'Name,City,Score\nZoë,Köln,12\nLi,Paris,7\n'],
      ['latin.xls', Buffer.from('Caf\xe9;Pr\xeat\nna\xefve;1\n', 'latin1'), 'csv', 'Café,Prêt\nnaïve,1\n'],
    ];
    for (const [name, bytes, target, expected] of files) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      const text = await readFile(await convert(path, name.slice(-3), target), 'utf8');
      assert.equal(text, expected, name);
    }
  });

  it('an HTML page named .doc or .xls is refused, naming what it is, and LibreOffice fetches nothing it links to (its HTML import would)', async () => {
    const port = (server.address() as AddressInfo).port;
    const page = `<html><head><link rel="stylesheet" href="http://127.0.0.1:${port}/style.css"></head><body><h1>Report</h1><img src="http://127.0.0.1:${port}/x.png"><table><tr><td>A</td><td>1</td></tr></table></body></html>`;
    requests = 0;
    for (const source of ['doc', 'xls']) {
      const path = join(dir, `report.${source}`);
      await writeFile(path, page);
      const error = await failure(convert(path, source, 'pdf'));
      assert.ok(error instanceof ConversionFailure && error.code === 'input_invalid', String(error));
      assert.equal(error.message, `The file is a web page (HTML), not ${source === 'doc' ? 'a doc' : 'an xls'} file: send it named .html.`);
    }
    assert.equal(requests, 0, 'nothing fetched');
  });

  it('LibreOffice reads no file outside the system and the temp directory: an RTF\'s INCLUDEPICTURE of an image elsewhere is left out; one in the temp directory, the control, is read', { skip: unconfinable }, async () => {
    // LibreOffice 7.4's RTF import reads the named file and embeds it whatever the profile says of
    // linked images: only the confinement (confine.py) keeps a document from the data directory.
    const sharp = (await import('sharp')).default;
    await mkdir(OUTSIDE_ROOT, { recursive: true });
    const outside = await mkdtemp(join(OUTSIDE_ROOT, 'confine-'));
    try {
      const rtfNaming = (image: string) => `{\\rtf1\\ansi{\\fonttbl\\f0 Arial;}\\f0 Before {\\field{\\*\\fldinst INCLUDEPICTURE "file://${image}"}{\\fldrslt }} after.\\par}`;
      const images: Record<string, number> = {};
      for (const [name, where] of [['outside', outside], ['control', dir]] as const) {
        const image = join(where, `${name}.png`);
        await sharp({ create: { width: 300, height: 200, channels: 3, background: '#0000ff' } }).png().toFile(image);
        const path = join(dir, `include-${name}.rtf`);
        await writeFile(path, rtfNaming(image));
        const output = await convert(path, 'rtf', 'pdf');
        assert.match((await pdfPageTexts(output)).join(' '), /Before\s+after/);
        images[name] = await imagesIn(output);
      }
      assert.equal(images.control, 1, 'the control: LibreOffice read the image in the temp directory');
      assert.equal(images.outside, 0, `no image of ${outside} in the PDF`);
      // A directory named in CONVD_OFFICE_READABLE (fonts kept elsewhere) is read.
      const allowing = createOfficeEngine({ instances: 1, env: { ...process.env, CONVD_OFFICE_READABLE: `/nonexistent:${outside}` } });
      try {
        assert.ok((await allowing.probe()).available);
        const made = jobOf(join(dir, 'include-outside.rtf'), 'rtf', 'pdf');
        await allowing.convert(made);
        assert.equal(await imagesIn(made.outputPath), 1, 'read where CONVD_OFFICE_READABLE names it');
      } finally {
        await allowing.close?.();
      }
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('images linked to a local file and to a loopback URL are neither read nor fetched', async () => {
    const secret = join(dir, 'secret.png');
    const sharp = (await import('sharp')).default;
    await sharp({ create: { width: 400, height: 300, channels: 3, background: '#ff0000' } }).png().toFile(secret);
    const port = (server.address() as AddressInfo).port;
    const path = join(dir, 'linked.docx');
    await writeFile(path, docxOf(linkedImages(), [`file://${secret}`, `http://127.0.0.1:${port}/x.png`]));
    requests = 0;
    const output = await convert(path, 'docx', 'pdf');
    assert.equal(requests, 0, 'nothing fetched');
    const pdf = await PDFDocument.load(await readFile(output));
    const resources = pdf.getPage(0).node.Resources();
    const images = resources?.lookupMaybe(PDFName.of('XObject'), PDFDict)?.keys().length ?? 0;
    assert.equal(images, 0, 'no image of the local file in the PDF');
  });
});

describe('office engine: the pool', { skip }, () => {
  /** An engine of this describe's own, whose instances are the only ones running here. */
  let pooled: ReturnType<typeof createOfficeEngine>;
  const job = (input: string, source: string, target: string, extra: Partial<EngineJob> = {}): EngineJob => jobOf(input, source, target, {}, extra);
  const convertOn = async (target: ReturnType<typeof createOfficeEngine>, made: EngineJob) => {
    await target.convert(made);
    return made.outputPath;
  };

  before(async () => {
    // The suite's shared engine is done: from here only the instances made below run.
    await engine.close?.();
    pooled = createOfficeEngine({ instances: INSTANCES });
    await pooled.probe();
  });
  after(async () => {
    await pooled?.close?.();
  });

  /** The parent pid and state of a process, or undefined once it is gone. */
  function procStat(pid: number): { ppid: number; state: string; command: string } | undefined {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      return { ppid: Number(fields[1]), state: fields[0]!, command: stat.slice(stat.indexOf('(') + 1, close) };
    } catch {
      return undefined;
    }
  }

  /** Running soffice.bin processes started by this test process's bridges (other suites run their own). */
  function sofficePids(): number[] {
    return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
      const own = procStat(pid);
      if (!own || own.command !== 'soffice.bin' || own.state === 'Z' || own.state === 'X') return false;
      return procStat(own.ppid)?.ppid === process.pid;
    });
  }
  const sofficeCount = () => sofficePids().length;

  /** The profile directories of those processes. */
  function profilesInUse(): string[] {
    return sofficePids().map((pid) => /-env:UserInstallation=file:\/\/([^\0]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))?.[1] ?? '').filter(Boolean);
  }

  it(`${INSTANCES + 2} conversions at once on ${INSTANCES} instances all succeed, one document per instance`, async () => {
    const outputs = await Promise.all(Array.from({ length: INSTANCES + 2 }, () => convertOn(pooled, job(join(dir, 'fixture.docx'), 'docx', 'pdf'))));
    for (const output of outputs) assert.equal((await PDFDocument.load(await readFile(output))).getPageCount(), 1);
    assert.equal(sofficeCount(), INSTANCES, 'as many LibreOffice processes as instances');
  });

  it('a hung conversion is killed at its limit; the others succeed and the pool is whole again', async () => {
    // 300,000 rows laid out as PDF pages: far more than the few seconds it is given.
    const rows = Array.from({ length: 300_000 }, (_, i) => `${i},row ${i},${i * 7}`).join('\n');
    await writeFile(join(dir, 'huge.csv'), `id,name,value\n${rows}\n`);
    const controller = new AbortController();
    const reason = new Error('time limit');
    const hung = convertOn(pooled, job(join(dir, 'huge.csv'), 'csv', 'pdf', { signal: controller.signal }));
    setTimeout(() => controller.abort(reason), 3000);
    const others = await Promise.all(Array.from({ length: 3 }, () => convertOn(pooled, job(join(dir, 'fixture.odt'), 'odt', 'pdf'))));
    assert.equal(others.length, 3);
    assert.equal(await failure(hung), reason);
    // The killed instance is replaced by the next document that needs one.
    await Promise.all(Array.from({ length: INSTANCES }, () => convertOn(pooled, job(join(dir, 'fixture.docx'), 'docx', 'odt'))));
    await waitFor(() => sofficeCount() === INSTANCES, 5000, `${INSTANCES} instances running again`);
  });

  it('kill -9 of an instance mid-conversion fails that one document; the next succeeds', async () => {
    // An engine of its own, with one instance: the soffice killed is the one converting.
    const single = createOfficeEngine({ instances: 1 });
    await single.probe();
    try {
      const rows = Array.from({ length: 100_000 }, (_, i) => `${i},row ${i}`).join('\n');
      await writeFile(join(dir, 'long.csv'), `id,name\n${rows}\n`);
      const before = new Set(sofficePids());
      let working = false;
      // startClock: the instance is up and has the document (the engine starts its clock there).
      const running = convertOn(single, job(join(dir, 'long.csv'), 'csv', 'pdf', { startClock: () => (working = true) }));
      await waitFor(() => working, 60_000, 'the conversion to begin');
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const pid of sofficePids().filter((p) => !before.has(p))) process.kill(pid, 'SIGKILL');
      const error = await failure(running);
      assert.ok(error instanceof ConversionFailure, String(error));
      assert.equal(error.code, 'conversion_failed');
      assert.match(error.message, /LibreOffice stopped unexpectedly/);
      const next = await convertOn(single, job(join(dir, 'fixture.docx'), 'docx', 'pdf'));
      assert.equal((await PDFDocument.load(await readFile(next))).getPageCount(), 1);
    } finally {
      await single.close?.();
    }
  });

  it('a document whose opening crashes its instance converts a second way, counted; a damaged file is not retried; a second crash fails clearly', async () => {
    // LibreOffice aborts (SIGABRT, as 7.4 does on some real .doc and .docx) as the instance opens
    // a name holding `crash-on-load`, and in the second way too for `crash-twice`.
    const faulty = createOfficeEngine({ instances: 1, faultsForTests: { crashOnLoad: 'crash-on-load', crashOnStore: 'crash-on-store', crashSecondWay: 'crash-twice' } });
    await faulty.probe();
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const profiles = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`convd-office-${process.pid}-`)).sort();
    const profilesBefore = profiles();
    const others = new Set(sofficePids());
    const instance = () => sofficePids().filter((pid) => !others.has(pid));
    const retried = (before: ReturnType<typeof officeRetries>) => {
      const now = officeRetries();
      return { succeeded: now.succeeded - before.succeeded, failed: now.failed - before.failed };
    };
    try {
      await convertOn(faulty, job(join(dir, 'fixture.docx'), 'docx', 'pdf'));
      const [warm] = instance();
      assert.ok(warm, 'a warm instance');

      // PDF/A-2b: the export's settings reach the second way too.
      let counts = officeRetries();
      const crashing = join(dir, 'crash-on-load.docx');
      await writeFile(crashing, await readFile(join(dir, 'fixture.docx')));
      const output = await convertOn(faulty, { ...job(crashing, 'docx', 'pdf'), variant: 'pdfa-2b' });
      assert.match((await pdfPageTexts(output)).join('\n'), new RegExp(OFFICE_MARKER));
      assert.match((await readFile(output)).toString('latin1'), /pdfaid:part>2<|pdfaid:part="2"/);
      assert.deepEqual(retried(counts), { succeeded: 1, failed: 0 });

      // Where the document prints its place (a FILENAME field), its name shows, not the server's
      // directory: the second way's first run writes a flat file, which is mended before the second.
      counts = officeRetries();
      const placed = join(dir, 'crash-on-load-placed.docx');
      await writeFile(placed, docxOf('<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>PLACE:</w:t></w:r><w:fldSimple w:instr=" FILENAME \\p "><w:r><w:t>old</w:t></w:r></w:fldSimple></w:p></w:body></w:document>'));
      const placedText = (await pdfPageTexts(await convertOn(faulty, job(placed, 'docx', 'pdf')))).join('\n');
      assert.match(placedText, /PLACE:\s*crash-on-load-placed/);
      assert.ok(!placedText.includes(tmpdir()) && !placedText.includes('convd-'), placedText);
      assert.deepEqual(retried(counts), { succeeded: 1, failed: 0 });

      // A text's txt the second way has its frames' words too, after their paragraphs (moved in
      // the flat file): LibreOffice's business card, every word in frames holding tables.
      counts = officeRetries();
      const card = join(dir, 'crash-on-load-card.ott');
      await writeFile(card, await readFile(BUSINESS_CARD));
      const cardText = await readFile(await convertOn(faulty, job(card, 'ott', 'txt')), 'utf8');
      const cardOrder = ['profession', 'Work:', 'GSM:', 'Home:', 'Designed by Edmund Laugasson'].map((words) => cardText.indexOf(words));
      assert.ok(cardOrder.every((at, i) => at >= 0 && (i === 0 || at > cardOrder[i - 1]!)), `in order: ${JSON.stringify(cardText)}`);
      assert.deepEqual(retried(counts), { succeeded: 1, failed: 0 });

      // A crash while the document is written (a Word file with comments, on Debian's -nogui
      // LibreOffice) goes the second way as well.
      counts = officeRetries();
      const crashingLate = join(dir, 'crash-on-store.docx');
      await writeFile(crashingLate, await readFile(join(dir, 'fixture.docx')));
      assert.match((await pdfPageTexts(await convertOn(faulty, job(crashingLate, 'docx', 'pdf')))).join('\n'), new RegExp(OFFICE_MARKER));
      assert.deepEqual(retried(counts), { succeeded: 1, failed: 0 });

      // The crashed instance is gone; the next document gets a new one, which stays (warm).
      assert.ok(!instance().includes(warm), 'the crashed instance is gone');
      await convertOn(faulty, job(join(dir, 'fixture.odt'), 'odt', 'pdf'));
      const [replaced] = instance();
      assert.ok(replaced !== undefined && replaced !== warm, 'a new instance converted the next document');

      // The second way's LibreOffice has the instances' settings: linked images neither read nor fetched.
      const linked = join(dir, 'crash-on-load-linked.docx');
      const port = (server.address() as AddressInfo).port;
      const secret = join(dir, 'secret-second-way.png');
      const sharp = (await import('sharp')).default;
      await sharp({ create: { width: 400, height: 300, channels: 3, background: '#ff0000' } }).png().toFile(secret);
      await writeFile(linked, docxOf(linkedImages(), [`file://${secret}`, `http://127.0.0.1:${port}/x.png`]));
      counts = officeRetries();
      const linkedPdf = await convertOn(faulty, job(linked, 'docx', 'pdf'));
      assert.match((await pdfPageTexts(linkedPdf)).join('\n'), /Linked images/);
      assert.deepEqual(retried(counts), { succeeded: 1, failed: 0 });
      assert.equal(requests, 0, 'nothing fetched');
      const resources = (await PDFDocument.load(await readFile(linkedPdf))).getPage(0).node.Resources();
      assert.equal(resources?.lookupMaybe(PDFName.of('XObject'), PDFDict)?.keys().length ?? 0, 0, 'no image of the local file in the PDF');

      // A damaged file is damaged, not a crash: input_invalid, no second way.
      counts = officeRetries();
      const damaged = join(dir, 'damaged.docx');
      await writeFile(damaged, storedZip('word/document.xml', Buffer.alloc(4096, 7)));
      const invalid = await failure(convertOn(faulty, job(damaged, 'docx', 'pdf')));
      assert.ok(invalid instanceof ConversionFailure && invalid.code === 'input_invalid', String(invalid));
      assert.deepEqual(retried(counts), { succeeded: 0, failed: 0 });

      // landscape: the second way cannot turn pages, so the crash fails the document as before, without a path.
      const turned = await failure(convertOn(faulty, { ...job(crashing, 'docx', 'pdf'), options: defaults(pairOf('docx', 'pdf'), { landscape: true }) }));
      assert.ok(turned instanceof ConversionFailure && turned.code === 'conversion_failed', String(turned));
      assert.equal(turned.message, 'LibreOffice stopped unexpectedly: soffice crashed (signal 6) while opening the document.');
      assert.deepEqual(retried(counts), { succeeded: 0, failed: 0 });

      // Crashing the second way as well: conversion_failed that says both.
      const twice = join(dir, 'crash-on-load-crash-twice.docx');
      await writeFile(twice, await readFile(join(dir, 'fixture.docx')));
      const error = await failure(convertOn(faulty, job(twice, 'docx', 'pdf')));
      assert.ok(error instanceof ConversionFailure && error.code === 'conversion_failed', String(error));
      assert.match(error.message, /crashed on the document, and a second try .* failed too: it crashed as well/);
      assert.doesNotMatch(error.message, /\//, 'no path in the message');
      assert.deepEqual(retried(counts), { succeeded: 0, failed: 1 });
    } finally {
      await faulty.close?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await waitFor(() => instance().length === 0, 5000, 'no soffice of the faulty engine left');
    await waitFor(() => profiles().join() === profilesBefore.join(), 5000, "no profile of the faulty engine's instances or of its second way left");
  });

  it('opens documents from a directory kept between them: emptied after a success, removed after a failure and at close', async () => {
    const documentDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`convd-doc-${process.pid}-`)).sort();
    const others = new Set(documentDirs());
    const ours = () => documentDirs().filter((name) => !others.has(name));
    const single = createOfficeEngine({ instances: 1 });
    await single.probe();
    try {
      await convertOn(single, job(join(dir, 'fixture.docx'), 'docx', 'pdf', { inputName: 'quarterly report.docx' }));
      const [kept, ...more] = ours();
      assert.ok(kept && more.length === 0, `one directory after a document: ${ours().join(', ')}`);
      assert.deepEqual(readdirSync(join(tmpdir(), kept)), ['out'], 'the input removed, nothing else left');
      assert.deepEqual(readdirSync(join(tmpdir(), kept, 'out')), [], 'the output moved away');
      await convertOn(single, job(join(dir, 'fixture.odt'), 'odt', 'docx'));
      assert.deepEqual(ours(), [kept], 'the next document opened from the same directory');
      await writeFile(join(dir, 'not-a-zip.docx'), 'this is no zip at all, whatever its name says');
      assert.ok(await failure(convertOn(single, job(join(dir, 'not-a-zip.docx'), 'docx', 'pdf'))) instanceof ConversionFailure);
      assert.deepEqual(ours(), [], "a failed document's directory is removed, not kept");
      await convertOn(single, job(join(dir, 'fixture.docx'), 'docx', 'pdf'));
      assert.equal(ours().length, 1);
    } finally {
      await single.close?.();
    }
    assert.deepEqual(ours(), [], 'close() removes the kept directory');
  });

  it('close() leaves no soffice and no profile behind', async () => {
    await convertOn(pooled, job(join(dir, 'fixture.docx'), 'docx', 'pdf'));
    assert.equal(sofficeCount(), INSTANCES);
    const profiles = profilesInUse();
    assert.equal(profiles.length, INSTANCES);
    await pooled.close?.();
    await waitFor(() => sofficeCount() === 0, 5000, 'every soffice to end');
    for (const profile of profiles) assert.ok(!existsSync(decodeURIComponent(profile)), `${profile} was removed`);
  });
});

/** word/document.xml with two pictures linked (not embedded) through rIdL0 and rIdL1. */
function linkedImages(): string {
  const picture = (id: number) => `<w:p><w:r><w:drawing><wp:inline><wp:extent cx="3000000" cy="2000000"/><wp:docPr id="${id + 1}" name="p${id}"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="${id + 1}" name="p${id}"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:link="rIdL${id}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="3000000" cy="2000000"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`;
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body><w:p><w:r><w:t>Linked images</w:t></w:r></w:p>${picture(0)}${picture(1)}</w:body></w:document>`;
}
