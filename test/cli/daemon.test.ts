import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { api, convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { cleanEnv, spawnConv, tempDir, type RunResult } from '../helpers/cli-helpers.ts';

const run = promisify(execFile);

/**
 * The real `conv` binary as a child process against a real convd on an ephemeral port: outputs
 * parsed and compared with what the API itself answers, result files decoded, every exit code.
 */

let daemon: DaemonHandle;
let dir: { path: string; remove: () => Promise<void> };
let png: Buffer;
/** A local server whose responses never finish: URL inputs stay `fetching` as long as needed. */
let slow: http.Server;
let slowUrl: string;
const slowSockets = new Set<Socket>();

before(async () => {
  [daemon, dir] = await Promise.all([startDaemon({ args: ['--allow-private-urls'] }), tempDir('conv-daemon-')]);
  png = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 250, g: 20, b: 20 } } }).png().toBuffer();
  await writeFile(join(dir.path, 'red.png'), png);
  await writeFile(join(dir.path, 'blue.png'), await sharp({ create: { width: 20, height: 10, channels: 3, background: '#0000ff' } }).png().toBuffer());
  await writeFile(join(dir.path, 'broken.png'), 'this is not a png at all');
  slow = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(png.length) });
    res.write(png.subarray(0, 10));
  });
  slow.on('connection', (socket) => {
    slowSockets.add(socket);
    socket.on('close', () => slowSockets.delete(socket));
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/held.png`;
});

after(async () => {
  for (const socket of slowSockets) socket.destroy();
  await new Promise<void>((resolve) => slow.close(() => resolve()));
  await daemon?.dispose();
  await dir?.remove();
});

function env(key = daemon.apiKey, baseUrl = daemon.baseUrl): NodeJS.ProcessEnv {
  return cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: join(dir.path, 'config'), CONV_BASE_URL: baseUrl, CONV_API_KEY: key });
}

const conv = (args: string[], options: { key?: string; baseUrl?: string; stdin?: Buffer } = {}): Promise<RunResult> =>
  spawnConv(args, { env: env(options.key, options.baseUrl), cwd: dir.path, stdin: options.stdin });

function json<T = Record<string, unknown>>(result: RunResult): T {
  assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

async function apiGet(path: string, key = daemon.apiKey): Promise<any> {
  const answer = await api({ baseUrl: daemon.baseUrl, apiKey: key }, path);
  assert.ok(answer.status < 300, `GET ${path}: ${answer.status}`);
  return answer.body;
}

/** A fresh account of a plan with its own key, through the admin CLI. */
async function account(plan: string): Promise<{ id: string; key: string }> {
  const created = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', plan, '--json']);
  assert.equal(created.code, 0, created.stderr);
  const id = (created.json as { id: string }).id;
  const key = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', id, '--json']);
  assert.equal(key.code, 0, key.stderr);
  return { id, key: (key.json as { key: string }).key };
}

describe('conv against convd', () => {
  let converted: { id: string };
  // Created up front and in parallel: each admin command is a process start.
  let accounts: Record<'free' | 'broke' | 'paying', Promise<{ id: string; key: string }>>;
  before(() => {
    accounts = { free: account('free'), broke: account('lite'), paying: account('lite') };
    for (const pending of Object.values(accounts)) pending.catch(() => undefined);
  });

  it('convert --wait -o writes a file that decodes as the target (exit 0)', async () => {
    const result = await conv(['convert', 'red.png', '--to', 'webp', '--wait', '-o', 'red.webp', '--json']);
    converted = json(result);
    const image = await sharp(await readFile(join(dir.path, 'red.webp'))).metadata();
    assert.equal(image.format, 'webp');
    assert.equal(image.width, 40);
    assert.equal(image.height, 30);
    const { path, ...apiObject } = converted as typeof converted & { path?: string };
    assert.deepEqual(apiObject, await apiGet(`/conversions/${converted.id}`), '--json prints the API object unchanged');
    assert.equal(path, join(dir.path, 'red.webp'), 'and where it saved the result');
    assert.equal((converted as { status?: string }).status, 'succeeded');
    const names = await readdir(dir.path);
    assert.ok(!names.some((name) => name.endsWith('.part')), 'no temporary file left');
  });

  it('split --every unpacks the parts the server zipped; --unzip does the same for every page as images', async () => {
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (let p = 1; p <= 5; p++) doc.addPage([200, 200]).drawText(`Part page ${p}`, { x: 20, y: 150, size: 14, font });
    await writeFile(join(dir.path, 'five.pdf'), await doc.save());
    const split = await conv(['split', 'five.pdf', '--every', '2', '-o', 'parts']);
    assert.equal(split.code, 0, split.stderr);
    assert.match(split.stdout, /five\.pdf → 3 files/);
    const parts = (await readdir(join(dir.path, 'parts'))).sort();
    assert.deepEqual(parts, ['pages-1-2.pdf', 'pages-3-4.pdf', 'pages-5.pdf']);
    const counts = await Promise.all(parts.map(async (name) => (await PDFDocument.load(await readFile(join(dir.path, 'parts', name)))).getPageCount()));
    assert.deepEqual(counts, [2, 2, 1]);
    const pages = await conv(['convert', 'five.pdf', '--to', 'png', '-O', 'pages=4-5', '-O', 'dpi=36', '--unzip', '-o', 'images/', '--json']);
    assert.equal(pages.code, 0, pages.stderr);
    assert.deepEqual((await readdir(join(dir.path, 'images'))).sort(), ['page-4.png', 'page-5.png']);
    assert.equal((await sharp(join(dir.path, 'images', 'page-4.png')).metadata()).width, 100);
    const usage = await conv(['split', 'five.pdf', '--every', '2', '--ranges', '1-2']);
    assert.equal(usage.code, 2);
  });

  it('merge uploads its files together and writes one PDF of them in order; -o naming an input is refused', async () => {
    await writeFile(join(dir.path, 'note.txt'), 'MERGED-NOTE-MARKER\n');
    const merged = await conv(['merge', 'five.pdf', 'red.png', 'note.txt', '-O', 'page_numbers={n}/{total}', '-o', 'merged.pdf', '--json']);
    assert.equal(merged.code, 0, merged.stderr);
    const conversion = json<{ inputs: { name: string; format: string }[]; path: string }>(merged);
    assert.deepEqual(conversion.inputs.map((input) => [input.name, input.format]), [['five.pdf', 'pdf'], ['red.png', 'png'], ['note.txt', 'txt']]);
    assert.equal(conversion.path, join(dir.path, 'merged.pdf'));
    const doc = await PDFDocument.load(await readFile(join(dir.path, 'merged.pdf')));
    assert.equal(doc.getPageCount(), 7);
    const refused = await conv(['merge', 'five.pdf', 'note.txt', '-o', 'five.pdf']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /one of the files to merge/);
    // Into a directory it is merged.pdf, or merged-1.pdf beside an input of that name.
    const before = await readFile(join(dir.path, 'merged.pdf'));
    const again = await conv(['merge', 'merged.pdf', 'note.txt', '-o', '.', '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(json<{ path: string }>(again).path, join(dir.path, 'merged-1.pdf'));
    assert.deepEqual(await readFile(join(dir.path, 'merged.pdf')), before, 'the input is untouched');
  });

  it('-O watermark_image=PATH sends that file beside the input and names it; on a merge too; a missing file is a usage error', async () => {
    await mkdir(join(dir.path, 'art'), { recursive: true });
    await writeFile(join(dir.path, 'art', 'seal.png'), png);
    const marked = await conv(['convert', 'five.pdf', '--to', 'pdf', '-O', 'watermark_image=art/seal.png', '-O', 'watermark_opacity=1', '-o', 'sealed.pdf', '--json']);
    const conversion = json<{ options: Record<string, unknown>; inputs: { name: string }[] }>(marked);
    assert.deepEqual(conversion.options, { watermark_image: 'seal.png', watermark_opacity: 1 });
    assert.deepEqual(conversion.inputs.map((one) => one.name), ['five.pdf']);
    const listed = async (name: string) => (await run('pdfimages', ['-list', join(dir.path, name)])).stdout.split('\n').slice(2)
      .map((line) => line.trim().split(/\s+/)).filter((row) => row[2] === 'image').map((row) => row[0]);
    assert.deepEqual(await listed('sealed.pdf'), ['1', '2', '3', '4', '5']);
    const merged = await conv(['merge', 'five.pdf', 'note.txt', '-O', 'stamp_image=art/seal.png', '-o', 'stamped.pdf']);
    assert.equal(merged.code, 0, merged.stderr);
    assert.equal((await listed('stamped.pdf')).length, (await PDFDocument.load(await readFile(join(dir.path, 'stamped.pdf')))).getPageCount());
    const missing = await conv(['convert', 'five.pdf', '--to', 'pdf', '-O', 'watermark_image=art/none.png']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /watermark_image=art\/none\.png: no such file/);
  });

  it('pipes stdin to stdout: a PNG in, a JPEG out', async () => {
    const result = await conv(['convert', '-', '--from', 'png', '--to', 'jpg', '-O', 'quality=60', '-o', '-'], { stdin: png });
    assert.equal(result.code, 0, result.stderr);
    const image = await sharp(result.stdoutBytes).metadata();
    assert.equal(image.format, 'jpeg');
    assert.equal(image.width, 40);
    assert.match(result.stderr, /stdin\.png → stdout/, 'messages go to stderr when stdout carries the file');
  });

  it('converts several inputs at once into a directory', async () => {
    const result = await conv(['convert', 'red.png', 'blue.png', '--to', 'png', '-O', 'width=10', '-o', 'out/', '--json']);
    const conversions = json<{ id: string; options: Record<string, unknown> }[]>(result);
    assert.equal(conversions.length, 2);
    assert.equal(conversions[0]!.options.width, 10, 'options go typed');
    const red = await sharp(join(dir.path, 'out', 'red.png')).metadata();
    const blue = await sharp(join(dir.path, 'out', 'blue.png')).metadata();
    assert.equal(red.width, 10);
    assert.equal(blue.width, 10);
  });

  it('checks -O against the format before uploading anything (exit 2)', async () => {
    const before = (await apiGet('/conversions?limit=100')).data.length;
    const result = await conv(['convert', 'red.png', '--to', 'webp', '-O', 'quality=500', '-O', 'speed=3']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^error: validation_failed: invalid options for png → webp:\n {2}-O quality: must be between 1 and 100\n {2}-O speed: is not an option/);
    assert.equal((await apiGet('/conversions?limit=100')).data.length, before, 'nothing was submitted');
  });

  it('submits without waiting: prints the conversion, or only its id with -q', async () => {
    const quiet = await conv(['convert', 'red.png', '--to', 'gif', '-q']);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.match(quiet.stdout, /^cnv_\w+\n$/);
  });

  it('get, list and list --all print the API objects', async () => {
    assert.deepEqual(json(await conv(['get', converted.id, '--json'])), await apiGet(`/conversions/${converted.id}`));
    const page = json<{ data: { id: string }[]; next_cursor: string | null }>(await conv(['list', '--json', '--limit', '2']));
    assert.deepEqual(page, await apiGet('/conversions?limit=2'));
    assert.ok(page.next_cursor, 'there is a second page');
    const all = await conv(['list', '--all', '--json', '--limit', '2']);
    assert.equal(all.code, 0, all.stderr);
    const lines = all.stdout.trim().split('\n').map((line) => JSON.parse(line) as { id: string });
    const everything = await apiGet('/conversions?limit=100');
    assert.deepEqual(lines, everything.data, 'NDJSON of every page, in order');
    const failed = await conv(['list', '--status', 'succeeded', '--json']);
    assert.deepEqual(json(failed), await apiGet('/conversions?status=succeeded'));
    const table = await conv(['list']);
    assert.match(table.stdout, /^ID\s+STATUS\s+CONVERSION/);
    assert.ok(table.stdout.includes(converted.id));
  });

  it('download writes the same bytes the API serves, and -o - streams them', async () => {
    const api = await fetch(`${daemon.baseUrl}/conversions/${converted.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
    const expected = Buffer.from(await api.arrayBuffer());
    const saved = json<{ path: string; filename: string; size: number }>(await conv(['download', converted.id, '-o', 'dl/', '--json']));
    assert.equal(saved.filename, 'red.webp');
    assert.equal(saved.size, expected.length);
    assert.ok((await readFile(saved.path)).equals(expected));
    const piped = await conv(['download', converted.id, '-o', '-']);
    assert.equal(piped.code, 0, piped.stderr);
    assert.ok(piped.stdoutBytes.equals(expected));
  });

  it('delete expires a result; downloading it then exits 4', async () => {
    const deleted = json<{ id: string; status: string }>(await conv(['delete', converted.id, '--json']));
    assert.equal(deleted.status, 'expired');
    assert.deepEqual(deleted, await apiGet(`/conversions/${converted.id}`));
    const gone = await conv(['download', converted.id]);
    assert.equal(gone.code, 4);
    assert.match(gone.stderr, /^error: expired: /);
  });

  it('--wait N gives up with exit 6, cancel stops the conversion, a second cancel exits 1', async () => {
    const waited = await conv(['convert', slowUrl, '--to', 'webp', '--wait', '1', '--json']);
    assert.equal(waited.code, 6, waited.stderr);
    assert.match(waited.stderr, /^error: wait_timeout: held\.png: cnv_\w+ is still (queued|fetching) after 1 s/);
    const pending = JSON.parse(waited.stdout) as { id: string; status: string };
    const cancelled = json<{ id: string; status: string }>(await conv(['cancel', pending.id, '--json']));
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(cancelled, await apiGet(`/conversions/${pending.id}`));
    const again = await conv(['cancel', pending.id]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^error: invalid_state: cnv_\w+ is cancelled/);
  });

  it('a conversion that fails exits 5 with its error code', async () => {
    const result = await conv(['convert', 'broken.png', '--to', 'webp', '--wait']);
    assert.equal(result.code, 5);
    assert.match(result.stderr, /^error: input_invalid: broken\.png: /);
  });

  it('formats and account print the API objects', async () => {
    assert.deepEqual(json(await conv(['formats', '--json'])), await apiGet('/formats'));
    assert.deepEqual(json(await conv(['formats', 'png', '--json'])), await apiGet('/formats/png'));
    assert.deepEqual(json(await conv(['account', '--json'])), await apiGet('/account'));
    const unknown = await conv(['formats', 'nosuchformat']);
    assert.equal(unknown.code, 4);
  });

  it('exit 3 for a wrong key, 4 for an unknown conversion', async () => {
    const unauthenticated = await conv(['get', 'cnv_x'], { key: 'cvk_not_a_key' });
    assert.equal(unauthenticated.code, 3);
    assert.match(unauthenticated.stderr, /^error: unauthenticated: /);
    const missing = await conv(['get', 'cnv_doesnotexist']);
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /^error: not_found: /);
  });

  it('exit 7 when the plan\'s concurrent conversions are taken (after retrying)', async () => {
    const free = await accounts.free;
    const held: string[] = [];
    try {
      for (let i = 0; i < 2; i += 1) {
        const submitted = await conv(['convert', slowUrl, '--to', 'webp', '-q'], { key: free.key });
        assert.equal(submitted.code, 0, submitted.stderr);
        held.push(submitted.stdout.trim());
      }
      const third = await conv(['convert', 'red.png', '--to', 'webp'], { key: free.key });
      assert.equal(third.code, 7, third.stderr);
      assert.match(third.stderr, /^error: concurrency_limit: /);
    } finally {
      // Held fetches occupy workers: free them for the tests that follow.
      for (const id of held) await api({ baseUrl: daemon.baseUrl, apiKey: free.key }, `/conversions/${id}`, { method: 'DELETE' });
    }
  });

  it('exit 8 when the credits cannot cover the conversion', async () => {
    const broke = await accounts.broke;
    const update = await convdAdmin(daemon.dataDir, ['accounts', 'update', broke.id, '--credits', '0', '--json']);
    assert.equal(update.code, 0, update.stderr);
    const result = await conv(['convert', 'red.png', '--to', 'webp'], { key: broke.key });
    assert.equal(result.code, 8);
    assert.match(result.stderr, /^error: insufficient_credits: /);
  });

  it('a create whose answer is lost is retried with the same key and charged once', async () => {
    const paying = await accounts.paying;
    const startCredits = (await apiGet('/account', paying.key)).credits.remaining as number;
    // A proxy that forwards the first POST, lets convd create the conversion, then drops the
    // connection before the answer reaches conv: the situation an Idempotency-Key exists for.
    const keys: string[] = [];
    const upstream = new URL(daemon.url);
    const proxy = http.createServer((req, res) => {
      const isCreate = req.method === 'POST';
      if (isCreate) keys.push(String(req.headers['idempotency-key']));
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        if (isCreate && keys.length === 1) {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`;
      const result = await conv(['convert', 'red.png', '--to', 'webp', '-o', 'retried.webp', '--json'], { key: paying.key, baseUrl: proxied });
      const conversion = json<{ id: string; credits: number }>(result);
      assert.equal(keys.length, 2, 'the create was sent twice');
      assert.equal(keys[0], keys[1], 'with the same Idempotency-Key');
      const listed = await apiGet('/conversions', paying.key);
      assert.deepEqual(listed.data.map((c: { id: string }) => c.id), [conversion.id], 'one conversion exists');
      const endCredits = (await apiGet('/account', paying.key)).credits.remaining as number;
      assert.equal(startCredits - endCredits, conversion.credits, 'charged once');
      assert.equal(conversion.credits, 1);
      assert.equal((await sharp(join(dir.path, 'retried.webp')).metadata()).format, 'webp');
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
