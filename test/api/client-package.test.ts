/**
 * The package's client for Node (`convd/client`): its built module resolves by the package's own
 * name, and ConvdClient converts, merges, waits and downloads against a real daemon.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { ClientError, ConvdClient } from '../../src/client/index.ts';
import { png } from '../helpers/api-support.ts';
import { ROOT, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

describe('convd/client', () => {
  let daemon: DaemonHandle;
  let dir: string;
  let client: ConvdClient;
  before(async () => {
    [daemon, dir] = await Promise.all([startDaemon(), mkdtemp(join(tmpdir(), 'convd-client-'))]);
    client = new ConvdClient({ baseUrl: daemon.baseUrl, apiKey: daemon.apiKey });
  });
  after(async () => {
    await client.close();
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('is the package\'s export: import \'convd/client\' gives the client, its error and webhook verification', async () => {
    const script = "const m = await import('convd/client'); console.log(JSON.stringify(Object.keys(m).sort()));";
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    const names = JSON.parse(stdout) as string[];
    for (const name of ['ConvdClient', 'HttpClient', 'ClientError', 'verifyWebhook']) assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
  });

  it('convertFile submits, waits and downloads; a failure rejects with the conversion\'s code', async () => {
    const input = join(dir, 'photo.png');
    await writeFile(input, await png(64, 48));
    const output = join(dir, 'photo.webp');
    const conversion = await client.convertFile(input, 'webp', output, { options: { quality: 60 } });
    assert.equal(conversion.status, 'succeeded');
    assert.equal(conversion.options.quality, 60);
    const meta = await sharp(output).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 64, 48]);
    const broken = join(dir, 'broken.png');
    await writeFile(broken, 'not an image');
    await assert.rejects(client.convertFile(broken, 'webp', join(dir, 'never.webp')), (error) => error instanceof ClientError && error.code === 'input_invalid');
  });

  it('merge, wait and downloadTo: two files into one PDF', async () => {
    const doc = await PDFDocument.create();
    doc.addPage([200, 200]);
    const pdf = join(dir, 'one.pdf');
    await writeFile(pdf, await doc.save());
    const image = join(dir, 'two.png');
    await writeFile(image, await png(80, 60));
    const submitted = await client.merge([pdf, image], { options: { page_numbers: '{n}/{total}' } });
    assert.deepEqual(submitted.inputs?.map((input) => input.format), ['pdf', 'png']);
    const ended = await client.wait(submitted.id, { timeoutSeconds: 60 });
    assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
    const saved = await client.downloadTo(ended.id, join(dir, 'merged.pdf'));
    assert.equal((await PDFDocument.load(await readFile(saved))).getPageCount(), 2);
    await assert.rejects(client.merge([pdf]), (error) => error instanceof ClientError && error.code === 'validation_failed');
  });

  it('attachments: the image an option names goes beside the input and is drawn on the page', async () => {
    const doc = await PDFDocument.create();
    doc.addPage([200, 200]);
    const pdf = join(dir, 'letter.pdf');
    await writeFile(pdf, await doc.save());
    const seal = join(dir, 'seal.png');
    await writeFile(seal, await png(40, 40));
    const submitted = await client.convert(pdf, 'pdf', { options: { stamp_image: 'seal.png' }, attachments: [seal], wait: 30 });
    const ended = await client.wait(submitted, { timeoutSeconds: 60 });
    assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
    assert.deepEqual(ended.inputs?.map((input) => input.name), ['letter.pdf']);
    const saved = await client.downloadTo(ended.id, join(dir, 'sealed.pdf'));
    const listed = (await promisify(execFile)('pdfimages', ['-list', saved])).stdout;
    assert.match(listed.split('\n')[2] ?? '', /^\s*1\s+0\s+image\s+40\s+40/, listed);
  });
});
