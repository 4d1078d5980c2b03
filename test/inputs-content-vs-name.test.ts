/**
 * A file whose name lies about its format (issue 13, item 9), through the daemon: where the
 * content has a signature of a format convd knows, the content decides, and the conversion's
 * `source` says what it was; where that format cannot go to the target, the 422 names both what
 * the content is and what the name says. A .json that is plainly a table is read as CSV.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { parse as parseYaml } from 'yaml';
import { findBinary } from '../src/engines/media/binaries.ts';
import { readsMpegTs } from '../src/engines/media/probe.ts';
import { api, startDaemon, type DaemonHandle } from './helpers/daemon.ts';

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

  it('an MPEG transport stream named .ts or .mts is a ts: converted where ffprobe reads MPEG-TS, else refused naming ts', async () => {
    const ffmpeg = await findBinary('ffmpeg');
    const ffprobe = await findBinary('ffprobe');
    assert.ok(ffmpeg && ffprobe, 'ffmpeg and ffprobe are found (npm installs them)');
    const path = join(dir, 'city.ts');
    await promisify(execFile)(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-t', '1', '-f', 'mpegts', '-y', path]);
    const offered = await readsMpegTs(ffmpeg.path, ffprobe.path);
    for (const name of ['city.ts', 'city.mts']) {
      const answer = await submit(await readFile(path), name, 'png');
      if (offered) {
        assert.ok(answer.status === 200 || answer.status === 202, JSON.stringify(answer.body));
        assert.equal(answer.body.source, 'ts');
      } else {
        assert.equal(answer.status, 422, JSON.stringify(answer.body));
        assert.match((answer.body as unknown as { error: { message: string } }).error.message, /Converting ts to png is not supported/);
      }
    }
  });
});
