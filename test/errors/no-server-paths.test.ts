/**
 * No failure message shows a server path: damaged files of every engine's
 * formats through a real daemon end `failed` with a message about the user's file, never one
 * naming the data dir, the temp dir, a blob's name (`cnv_…`) or any other absolute path.
 * Nor does a result: a document that prints its own file name or path
 * (a FILENAME field, CELL("filename"), a sheet named after its file) prints the user's name.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { withoutServerPaths } from '../../src/service/user-message.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { docxOf, storedZip, storedZipOf } from '../helpers/hostile-files.ts';
import { zipMember } from '../helpers/office.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { download, uploadFile, waitForEnd, type Client } from '../helpers/registry-pairs-daemon.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';

/** Anything that looks like a path of this machine, or a stored file's name. */
const SERVER_PATH = /(?:^|[\s"'(:=])\/(?:tmp|var|home|root|usr|etc|work|run|srv|opt|proc)\b|cnv_[0-9a-z]{8,}|blobs\/|convd-[a-z]+-[A-Za-z0-9]{6}/;

describe('withoutServerPaths', () => {
  it('names the input and output files in words, and any other absolute path as "a file"', () => {
    const known = { '/data/blobs/inputs/cnv_01abc': 'the input file', '/data/blobs/work/cnv_01abc.png': 'the output file' };
    assert.equal(
      withoutServerPaths('The input cannot be decoded as heif: /data/blobs/inputs/cnv_01abc: bad seek to 61568', known),
      'The input cannot be decoded as heif: bad seek to 61568',
    );
    assert.equal(withoutServerPaths('cannot open /data/blobs/inputs/cnv_01abc for reading', known), 'cannot open the input file for reading');
    assert.equal(withoutServerPaths('VipsForeignSave: "/data/blobs/work/cnv_01abc.png" is not writable', known), 'VipsForeignSave: the output file is not writable');
    assert.equal(withoutServerPaths('cannot open /usr/share/fonts/x.ttf (No such file)', known), 'cannot open a file (No such file)');
    assert.equal(withoutServerPaths('page 3 of 4: 12/34 done, ratio 1/2', known), 'page 3 of 4: 12/34 done, ratio 1/2', 'fractions are not paths');
    assert.equal(withoutServerPaths('see https://example.com/a/b for more', known), 'see https://example.com/a/b for more', 'URLs are not server paths');
  });
});

describe('damaged files through the daemon: messages without server paths', () => {
  let dir: string;
  let daemon: DaemonHandle;
  let client: Client;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-no-paths-'));
    daemon = await startDaemon();
    client = { baseUrl: daemon.baseUrl, apiKey: daemon.apiKey };
  });

  after(async () => {
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const half = (bytes: Buffer) => bytes.subarray(0, bytes.length >> 1);
  const photo = () => sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 80, b: 40 } } }).png().toBuffer();

  async function damaged(): Promise<[string, Buffer, string][]> {
    const png = await photo();
    const pdf = Buffer.from(await (await PDFDocument.create()).save());
    return [
      ['photo.jpg', half(await sharp(png).jpeg().toBuffer()), 'png'],
      ['photo.png', half(png), 'webp'],
      ['photo.webp', half(await sharp(png).webp().toBuffer()), 'png'],
      ['photo.tiff', half(await sharp(png).tiff().toBuffer()), 'png'],
      ['photo.gif', half(await sharp(png).gif().toBuffer()), 'png'],
      ['photo.avif', half(await sharp(png).avif().toBuffer()), 'png'],
      // An iPhone photo's header, then nothing a decoder can use.
      ['IMG_0001.heic', Buffer.concat([Buffer.from('0000001866747970686569630000000068656963', 'hex'), randomBytes(4096)]), 'jpg'],
      ['clip.mp4', Buffer.concat([Buffer.from('0000002066747970697336d0000000200697336d6d703431', 'hex').subarray(0, 24), randomBytes(8192)]), 'webm'],
      ['song.mp3', Buffer.concat([Buffer.from('ID3'), randomBytes(4096)]), 'wav'],
      ['report.pdf', Buffer.concat([pdf.subarray(0, 40), randomBytes(2048)]), 'png'],
      ['scan.pdf', Buffer.concat([pdf.subarray(0, 40), randomBytes(2048)]), 'pdf'],
      ['data.json', Buffer.from('{"a": [1, 2,'), 'yaml'],
      ['table.csv', Buffer.from('a,b\n"unterminated,1\n'), 'json'],
      ['notes.docx', storedZip('word/document.xml', randomBytes(2048)), 'md'],
      ['book.epub', storedZip('OEBPS/content.opf', randomBytes(2048)), 'html'],
      ['sheet.xlsx', storedZip('xl/workbook.xml', randomBytes(2048)), 'csv'],
    ];
  }

  it('every engine: failed, and the message says nothing of the server', async () => {
    const seen: string[] = [];
    for (const [name, bytes, target] of await damaged()) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      const created = await uploadFile(client, { target, wait: '30' }, path, name);
      if (created.status !== 200 && created.status !== 202) {
        // Refused at submission (a format the registry does not offer here): its message too.
        assert.doesNotMatch(JSON.stringify(created.body), SERVER_PATH, `${name}: ${JSON.stringify(created.body)}`);
        continue;
      }
      const done = ['succeeded', 'failed'].includes(created.body.status) ? created.body : await waitForEnd(client, created.body.id, 120_000);
      if (done.status !== 'failed') continue; // a decoder that made something of it: nothing to say
      const message = done.error!.message;
      seen.push(`${name} -> ${target}: ${message}`);
      assert.ok(!message.includes(daemon.dataDir), `${name}: ${message}`);
      assert.ok(!message.includes(tmpdir() + '/'), `${name}: ${message}`);
      assert.doesNotMatch(message, SERVER_PATH, `${name} -> ${target}: ${message}`);
    }
    assert.ok(seen.length >= 10, `most damaged files fail (${seen.length}):\n${seen.join('\n')}`);
  });

  /** Documents that print their own name or path, each with the target that shows it. */
  function selfNaming(): [string, Buffer | string, string][] {
    const w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
    const sheet = '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="str"><f>CELL("filename")</f></c></row></sheetData></worksheet>';
    const xlsx = storedZipOf([
      ['[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'],
      ['_rels/.rels', '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>'],
      ['xl/workbook.xml', '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Totals" sheetId="1" r:id="rId1"/></sheets></workbook>'],
      ['xl/_rels/workbook.xml.rels', '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'],
      ['xl/worksheets/sheet1.xml', sheet],
    ]);
    return [
      ['quarterly report.docx', docxOf(`<w:document ${w}><w:body><w:p><w:r><w:t xml:space="preserve">This file: </w:t></w:r><w:fldSimple w:instr="FILENAME \\p"><w:r><w:t>stale</w:t></w:r></w:fldSimple></w:p></w:body></w:document>`), 'pdf'],
      // A field whose code Word split over runs, in the page header: field_scan.py must not take it for none.
      ['quarterly report.docx', splitFieldInHeaderDocx(), 'pdf'],
      ['quarterly report.odt', odtOf('<text:p>This file: <text:file-name text:display="full">stale</text:file-name></text:p>'), 'pdf'],
      ['quarterly report.ott', odtOf('<text:p>This template: <text:template-name text:display="full">stale</text:template-name></text:p>', 'application/vnd.oasis.opendocument.text-template'), 'pdf'],
      ['quarterly report.rtf', '{\\rtf1\\ansi{\\fonttbl{\\f0 Helvetica;}}\\f0 This file: {\\field{\\*\\fldinst FILENAME \\\\p}{\\fldrslt stale}}\\par}', 'pdf'],
      ['quarterly report.xlsx', xlsx, 'pdf'],
      ['quarterly report.csv', 'region,total\nNorth,42\n', 'pdf'],
      ['quarterly report.csv', 'region,total\nNorth,42\n', 'xlsx'],
      ['quarterly report.json', '[{"region": "North", "total": 42}]', 'pdf'],
    ];
  }

  /** A docx whose page header holds FILENAME \p as Word writes a field, its code split over two runs. */
  function splitFieldInHeaderDocx(): Buffer {
    const w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
    const run = (inner: string) => `<w:r>${inner}</w:r>`;
    const header = `<w:hdr ${w}><w:p>${run('<w:t xml:space="preserve">Header: </w:t>')}${run('<w:fldChar w:fldCharType="begin"/>')}${run('<w:instrText xml:space="preserve"> FILE</w:instrText>')}${run('<w:instrText xml:space="preserve">NAME \\p </w:instrText>')}${run('<w:fldChar w:fldCharType="separate"/>')}${run('<w:t>stale</w:t>')}${run('<w:fldChar w:fldCharType="end"/>')}</w:p></w:hdr>`;
    return storedZipOf([
      ['[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/header1.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml"/></Types>'],
      ['_rels/.rels', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'],
      ['word/_rels/document.xml.rels', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdH" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/header" Target="header1.xml"/></Relationships>'],
      ['word/header1.xml', header],
      ['word/document.xml', `<w:document ${w}><w:body><w:p>${run('<w:t>Body text.</w:t>')}</w:p><w:sectPr><w:headerReference w:type="default" r:id="rIdH"/></w:sectPr></w:body></w:document>`],
    ]);
  }

  /** A minimal OpenDocument text around `body` (the paragraphs of content.xml's office:text). */
  function odtOf(body: string, mimeType = 'application/vnd.oasis.opendocument.text'): Buffer {
    const ns = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"';
    return storedZipOf([
      ['mimetype', mimeType],
      ['META-INF/manifest.xml', `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mimeType}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`],
      ['content.xml', `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${ns}><office:body><office:text>${body}</office:text></office:body></office:document-content>`],
    ]);
  }

  it('results show the user\'s file name, never a conversion id or a server path (fields, sheet names, page headers)', async (t) => {
    const office = await findOffice(process.env);
    if (!office.ready) return t.skip(`LibreOffice: ${office.problem}`);
    const shown: string[] = [];
    for (const [name, content, target] of selfNaming()) {
      const path = join(dir, name);
      await writeFile(path, content);
      const created = await uploadFile(client, { target, wait: '30' }, path, name);
      assert.ok(created.status === 200 || created.status === 202, JSON.stringify(created.body));
      const done = created.body.status === 'succeeded' ? created.body : await waitForEnd(client, created.body.id, 120_000);
      assert.equal(done.status, 'succeeded', `${name} -> ${target}: ${JSON.stringify(done.error)}`);
      const result = join(dir, `result-${shown.length}.${target}`);
      await download(client, done.id, result);
      const text = target === 'pdf' ? (await pdfPageTexts(result)).join('\n')
        : target === 'xlsx' ? Array.from((await zipMember(office.python, result, 'xl/workbook.xml')).matchAll(/<sheet name="([^"]*)"/g), (m) => m[1]).join('\n')
          : await readFile(result, 'utf8');
      shown.push(`${name} -> ${target}: ${text.replace(/\s+/g, ' ').slice(0, 200)}`);
      const what = `${name} -> ${target}: ${text}`;
      // Data printed to PDF (a page header, or none, by whichever engine prints it) need not name
      // itself; nor does a template's template-name field (LibreOffice prints it empty for a
      // template opened to convert): those must only show no path.
      if (!/\.(csv|json|ott)$/.test(name) || target === 'xlsx') assert.match(text, /quarterly report/, what);
      assert.doesNotMatch(text, /cnv_|blobs|step1|\.office-/, what);
      assert.ok(!text.includes(daemon.dataDir), what);
      // Where a document prints where it is (FILENAME \\p, CELL("filename")), the name stands alone.
      assert.ok(!text.includes(tmpdir() + '/'), `${what}: a path of the server's`);
      assert.doesNotMatch(text, /file:\/\/|%20/, `${what}: a URL of the server's`);
      assert.doesNotMatch(text, /^\s*Page \d+\s*$/m, `${what}: a page number of LibreOffice's own`);
    }
    console.log(shown.join('\n'));
  });
});
