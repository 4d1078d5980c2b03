/**
 * A file whose name lies about its format, through the daemon: where the
 * content has a signature of a format convd knows, the content decides, and the conversion's
 * `source` says what it was; where that format cannot go to the target, the 422 names both what
 * the content is and what the name says, and where both say the same, names it once. A .json that
 * is plainly a table is read as CSV. Formats whose content file-type cannot tell (an XPM) or tells
 * as another (an svgz is gzip) go by the name; LibreOffice templates by their own signature.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { parse as parseYaml } from 'yaml';
import { findBinary } from '../../src/engines/media/binaries.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { api, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { makeOfficeFixtures, OFFICE_MARKER } from '../helpers/office.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { fixtureXpm } from '../helpers/xpm.ts';
import { storedZip } from '../helpers/hostile-files.ts';

const office = await findOffice(process.env);
const officeSkip = office.ready || process.env.CI === 'true' ? false : `LibreOffice is not installed here: ${office.ready ? '' : office.problem}`;

interface Answer {
  status: number;
  body: { id: string; status: string; source: string; error: { code: string; message: string; details?: Record<string, string> } | null };
}

describe('content against name', () => {
  let daemon: DaemonHandle;
  let dir: string;

  before(async () => {
    daemon = await startDaemon();
    dir = await mkdtemp(join(tmpdir(), 'convd-content-'));
  });

  after(async () => {
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function submit(bytes: Buffer, name: string, target: string, language = 'en'): Promise<Answer> {
    const form = new FormData();
    form.append('target', target);
    form.append('wait', '30');
    form.append('file', new Blob([bytes]), name);
    return api(daemon, '/conversions', { method: 'POST', body: form, headers: { 'accept-language': language } }) as Promise<Answer>;
  }

  async function output(id: string): Promise<Buffer> {
    const response = await fetch(`${daemon.baseUrl}/conversions/${id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
    assert.equal(response.status, 200);
    return Buffer.from(await response.arrayBuffer());
  }

  const pdf = async () => {
    const document = await PDFDocument.create();
    const font = await document.embedFont(StandardFonts.Helvetica);
    document.addPage([300, 200]).drawText('A PDF named .png', { x: 20, y: 100, size: 14, font });
    return Buffer.from(await document.save());
  };

  it('a PDF named .png converts as the PDF it is; source says pdf', async () => {
    const done = await submit(await pdf(), 'report.png', 'png');
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'succeeded', JSON.stringify(done.body.error));
    assert.equal(done.body.source, 'pdf');
    const meta = await sharp(await output(done.body.id)).metadata();
    assert.equal(meta.format, 'png');
  });

  it('a PDF named .png to a target no PDF goes to: 422 naming what it is and what its name says', async () => {
    const refused = await submit(await pdf(), 'photo.png', 'gif');
    assert.equal(refused.status, 422);
    const error = (refused.body as unknown as { error: { code: string; message: string; details: Record<string, string> } }).error;
    assert.equal(error.code, 'unsupported_conversion');
    assert.equal(error.message, "Converting pdf (the file's content; its name says .png) to gif is not supported.");
    assert.deepEqual(error.details, { source: 'pdf', target: 'gif', named: 'png' });
    const german = await submit(await pdf(), 'photo.png', 'gif', 'de');
    assert.match((german.body as unknown as { error: { message: string } }).error.message, /pdf \(der Inhalt der Datei; ihr Name sagt \.png\) nach gif/);
  });

  it('content and name agree on a format convd does not convert: refused plainly, naming it once', async () => {
    // A 7z archive's signature and a few bytes of it: file-type knows it, convd converts no 7z.
    const archive = Buffer.concat([Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0x00, 0x04]), Buffer.alloc(56)]);
    const refused = await submit(archive, 'backup.7z', 'pdf');
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, 'unsupported_conversion');
    assert.equal(refused.body.error?.message, 'Converting 7z to pdf is not supported.');
    assert.equal(refused.body.error?.details?.named, undefined);
    const german = await submit(archive, 'backup.7z', 'pdf', 'de');
    assert.equal(german.body.error?.message, 'Die Umwandlung von 7z nach pdf wird nicht unterstützt.');
  });

  it('a gzip-compressed SVG (content: gzip) named .svgz converts as svgz; an XPM as xpm', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"><rect width="20" height="30" fill="#000"/></svg>';
    const svgz = await submit(gzipSync(svg), 'drawing.svgz', 'png');
    assert.equal(svgz.body.status, 'succeeded', JSON.stringify(svgz.body));
    assert.equal(svgz.body.source, 'svgz');
    assert.deepEqual(await sharp(await output(svgz.body.id)).metadata().then((m) => [m.format, m.width, m.height]), ['png', 40, 30]);
    const xpm = await submit(Buffer.from(fixtureXpm(24, 16)), 'icon.xpm', 'png');
    assert.equal(xpm.body.status, 'succeeded', JSON.stringify(xpm.body));
    assert.equal(xpm.body.source, 'xpm');
    const { data, info } = await sharp(await output(xpm.body.id)).raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([info.width, info.height], [24, 16]);
    assert.deepEqual([...data.subarray(0, 3)], [0xc8, 0x8c, 0x3c], 'the left half: #C88C3C');
    const right = 23 * info.channels;
    assert.deepEqual([...data.subarray(right, right + 3)], [0x46, 0x82, 0xb4], 'the right half: SteelBlue');
  });

  /** The office fixtures, made once (one start of LibreOffice) for the tests that need them. */
  let fixtureDir: Promise<string> | undefined;
  const officeFixtures = () => (fixtureDir ??= (async () => {
    assert.ok(office.ready);
    const fixtures = join(dir, 'office');
    await mkdir(fixtures);
    await makeOfficeFixtures(office, fixtures);
    return fixtures;
  })());

  const pdfText = async (id: string, name: string) => {
    const path = join(dir, name);
    await writeFile(path, await output(id));
    return (await pdfPageTexts(path)).join('\n');
  };

  it('a LibreOffice template (.ott, its content an OpenDocument text template) converts to pdf as ott', { skip: officeSkip }, async () => {
    const fixtures = await officeFixtures();
    for (const kind of ['ott', 'dotx', 'fods', 'potx']) {
      const done = await submit(await readFile(join(fixtures, `fixture.${kind}`)), `template.${kind}`, 'pdf');
      assert.equal(done.body.status, 'succeeded', JSON.stringify(done.body));
      assert.equal(done.body.source, kind);
      assert.match(await pdfText(done.body.id, `template-${kind}.pdf`), new RegExp(OFFICE_MARKER));
    }
  });

  it('a pptx and a docx whose large images come first and [Content_Types].xml last convert as what their names say; a plain zip named .docx stays a zip', { skip: officeSkip }, async () => {
    assert.ok(office.ready);
    const fixtures = await officeFixtures();
    // Re-zipped as some real packages are: relationships, then 200 KB of images that do not
    // compress (file-type reads no further than its first 64 KB), the content types last.
    const rezip = [
      'import os, sys, zipfile',
      'source = zipfile.ZipFile(sys.argv[1])',
      'names = source.namelist()',
      'first = [n for n in names if n.endswith(".rels")]',
      'rest = [n for n in names if n not in first and n != "[Content_Types].xml"]',
      'with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as out:',
      '    for n in first: out.writestr(n, source.read(n))',
      '    for i in range(2): out.writestr(sys.argv[3] + "/media/image%d.png" % (i + 1), os.urandom(100000), zipfile.ZIP_STORED)',
      '    for n in rest + ["[Content_Types].xml"]: out.writestr(n, source.read(n))',
    ].join('\n');
    for (const [kind, folder] of [['pptx', 'ppt'], ['docx', 'word']] as const) {
      const rezipped = join(dir, `images-first.${kind}`);
      await promisify(execFile)(office.python, ['-c', rezip, join(fixtures, `fixture.${kind}`), rezipped, folder]);
      const done = await submit(await readFile(rezipped), `images-first.${kind}`, 'pdf');
      assert.equal(done.body.status, 'succeeded', JSON.stringify(done.body));
      assert.equal(done.body.source, kind);
      assert.match(await pdfText(done.body.id, `images-first-${kind}.pdf`), new RegExp(OFFICE_MARKER));
    }
    const plain = await submit(storedZip('notes/readme.txt', Buffer.from('no document in here\n'.repeat(10))), 'report.docx', 'pdf');
    assert.equal(plain.body.source, 'zip', JSON.stringify(plain.body));
  });

  it('a PNG named .jpg: source png', async () => {
    const png = await sharp({ create: { width: 32, height: 24, channels: 3, background: '#20a040' } }).png().toBuffer();
    const done = await submit(png, 'holiday.jpg', 'webp');
    assert.equal(done.body.status, 'succeeded', JSON.stringify(done.body.error));
    assert.equal(done.body.source, 'png');
    assert.deepEqual(await sharp(await output(done.body.id)).metadata().then((m) => [m.format, m.width]), ['webp', 32]);
  });

  it('a CSV named .json is read as CSV; real JSON stays JSON', async () => {
    const table = await submit(Buffer.from('name,city\nAnn,Oslo\nBob,Rome\n'), 'really_csv.json', 'yaml');
    assert.equal(table.body.status, 'succeeded', JSON.stringify(table.body.error));
    assert.equal(table.body.source, 'csv');
    assert.deepEqual(parseYaml((await output(table.body.id)).toString()), [{ name: 'Ann', city: 'Oslo' }, { name: 'Bob', city: 'Rome' }]);
    const json = await submit(Buffer.from('[{"name": "Ann"}]'), 'data.json', 'yaml');
    assert.equal(json.body.status, 'succeeded', JSON.stringify(json.body.error));
    assert.equal(json.body.source, 'json');
  });

  it('an MPEG transport stream named .ts or .mts is a ts, and converts (with Debian\'s ffprobe and the npm one alike)', async () => {
    const ffmpeg = await findBinary('ffmpeg');
    const ffprobe = await findBinary('ffprobe');
    assert.ok(ffmpeg && ffprobe, 'ffmpeg and ffprobe are found (npm installs them)');
    const path = join(dir, 'city.ts');
    await promisify(execFile)(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-t', '1', '-f', 'mpegts', '-y', path]);
    for (const name of ['city.ts', 'city.mts']) {
      const answer = await submit(await readFile(path), name, 'png');
      assert.ok(answer.status === 200 || answer.status === 202, JSON.stringify(answer.body));
      assert.equal(answer.body.source, 'ts');
    }
  });
});
