import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { cleanEnv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';
import { startConv, type ConvProcess } from '../helpers/cli-process.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

/**
 * `conv webhook listen` as a child process, receiving deliveries made by a real convd (started
 * with --allow-insecure-callbacks so an http callback to 127.0.0.1 is allowed) and crafted ones
 * signed here with the spec's rule, not with the project's signing code.
 */

interface Captured {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

let daemon: DaemonHandle;
let dir: { path: string; remove: () => Promise<void> };
let secret: string;
/** The application a listener forwards to; answers with `appStatus`. */
let app: http.Server;
let appUrl: string;
let appStatus = 200;
const appReceived: Captured[] = [];
const listeners: ConvProcess[] = [];

const now = () => Math.floor(Date.now() / 1000);
const sign = (body: Buffer, key: string, t = now()) => `t=${t},v1=${createHmac('sha256', key).update(`${t}.`).update(body).digest('hex')}`;
const env = () => cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: dir.path, XDG_CACHE_HOME: dir.path });

before(async () => {
  [daemon, dir] = await Promise.all([startDaemon({ args: ['--allow-insecure-callbacks'] }), tempDir('conv-listen-')]);
  const admin = await convdAdmin(daemon.dataDir, ['webhook-secret', '--account', daemon.accountId, '--json']);
  assert.equal(admin.code, 0, admin.stderr);
  secret = (admin.json as { secret: string }).secret;
  await writeFile(join(dir.path, 'dot.png'), await sharp({ create: { width: 12, height: 8, channels: 3, background: '#22aa44' } }).png().toBuffer());
  app = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      appReceived.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(appStatus, { 'content-type': 'text/plain' });
      response.end(`app says ${appStatus}`);
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/hooks`;
});

after(async () => {
  for (const listener of listeners) listener.kill();
  await new Promise<void>((resolve) => app.close(() => resolve()));
  await daemon?.dispose();
  await dir?.remove();
});

async function listen(args: string[]): Promise<{ process: ConvProcess; url: string }> {
  const listener = startConv(['webhook', 'listen', '--port', '0', ...args], { env: env(), cwd: dir.path });
  listeners.push(listener);
  await listener.waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+\//.test(listener.stderr()), 'the listening line');
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(listener.stderr())![1]!;
  return { process: listener, url };
}

/** Submits dot.png to the daemon with a callback and returns the conversion id. */
async function convertWithCallback(callback: string): Promise<string> {
  const result = await spawnConv(['convert', 'dot.png', '--to', 'webp', '--callback', callback, '--wait', '30', '--json'], {
    env: cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: dir.path, CONV_BASE_URL: daemon.baseUrl, CONV_API_KEY: daemon.apiKey }),
    cwd: dir.path,
  });
  assert.equal(result.code, 0, result.stderr);
  const conversion = JSON.parse(result.stdout) as { id: string; status: string };
  assert.equal(conversion.status, 'succeeded');
  return conversion.id;
}

async function post(url: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number; json: { error?: { code: string; message: string }; received?: boolean } }> {
  const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: response.status, json: (await response.json()) as { error?: { code: string; message: string } } };
}

describe('conv webhook listen', () => {
  it('verifies a delivery made by convd, prints it as NDJSON, forwards the raw body and headers', async () => {
    const { process: listener, url } = await listen(['--secret', secret, '--json', '--forward', appUrl]);
    const id = await convertWithCallback(url);
    await listener.waitFor(() => listener.jsonLines().length >= 1, 'one delivery on stdout');
    const [payload] = listener.jsonLines<{ event: string; data: { id: string; status: string; object: string } }>();
    assert.equal(payload!.event, 'conversion.succeeded');
    assert.equal(payload!.data.id, id);
    assert.equal(payload!.data.status, 'succeeded');
    assert.equal(payload!.data.object, 'conversion');

    // The application got the delivery byte for byte: its signature verifies with the account secret.
    const forwarded = appReceived.find((r) => r.body.includes(id));
    assert.ok(forwarded, 'the delivery reached the forward target');
    const signature = forwarded.headers['x-service-signature'] as string;
    const t = /t=(\d+)/.exec(signature)![1]!;
    assert.equal(signature, sign(forwarded.body, secret, Number(t)));
    assert.equal(forwarded.headers['x-service-event'], 'conversion.succeeded');
    assert.match(forwarded.headers['x-service-delivery'] as string, /\S+/);
    assert.deepEqual(JSON.parse(forwarded.body.toString()), payload);

    listener.child.kill('SIGINT');
    assert.equal(await listener.exited, 0, listener.stderr());
  });

  it('answers 400 with the reason to a delivery signed with another secret, and keeps running', async () => {
    const other = 'whsec_not_the_account_secret';
    const { process: listener, url } = await listen(['--secret', other]);
    const id = await convertWithCallback(url);
    await listener.waitFor(() => /error: bad_signature: delivery \S+ from 127\.0\.0\.1 rejected/.test(listener.stderr()), 'the rejection of the daemon\'s delivery');
    assert.equal(listener.stdout(), '');

    // Crafted deliveries: each reason, then a valid one (human line), then its repeat.
    const body = Buffer.from(JSON.stringify({ event: 'conversion.failed', data: { id: 'cnv_crafted', status: 'failed', original_name: 'x.png', target: 'webp', error: { code: 'input_invalid', message: 'broken' } } }));
    const headers = { 'x-service-event': 'conversion.failed', 'x-service-delivery': 'd-crafted-1' };
    const stale = await post(url, body, { ...headers, 'x-service-signature': sign(body, other, now() - 600) });
    assert.equal(stale.status, 400);
    assert.equal(stale.json.error?.code, 'stale_timestamp');
    const malformed = await post(url, body, { ...headers, 'x-service-signature': 'v1=abc' });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error?.code, 'malformed_header');
    const missing = await post(url, body, headers);
    assert.equal(missing.json.error?.code, 'malformed_header');
    const tampered = await post(url, Buffer.concat([body, Buffer.from(' ')]), { ...headers, 'x-service-signature': sign(body, other) });
    assert.equal(tampered.json.error?.code, 'bad_signature');
    const notJson = Buffer.from('not json');
    assert.equal((await post(url, notJson, { ...headers, 'x-service-signature': sign(notJson, other) })).json.error?.code, 'malformed_body');
    assert.equal((await fetch(url)).status, 405);

    const valid = await post(url, body, { ...headers, 'x-service-signature': sign(body, other) });
    assert.equal(valid.status, 200);
    assert.deepEqual(valid.json, { received: true });
    const again = await post(url, body, { ...headers, 'x-service-signature': sign(body, other) });
    assert.equal(again.status, 200);
    await listener.waitFor(() => listener.stdout().split('\n').filter(Boolean).length >= 2, 'two human lines');
    const lines = listener.stdout().trim().split('\n');
    assert.match(lines[0]!, /^\d\d:\d\d:\d\d conversion\.failed cnv_crafted failed x\.png → webp input_invalid: broken \(delivery d-crafted-1\)$/);
    assert.match(lines[1]!, /\(delivery d-crafted-1, repeat\)$/);
    for (const reason of ['stale_timestamp', 'malformed_header', 'bad_signature', 'malformed_body']) {
      assert.match(listener.stderr(), new RegExp(`error: ${reason}: `));
    }
    assert.ok(!listener.stdout().includes(id), 'the rejected daemon delivery was not printed');

    listener.child.kill('SIGTERM');
    assert.equal(await listener.exited, 0);
  });

  it('relays the forward target\'s answer, and 502 when it cannot be reached', async () => {
    const key = 'whsec_forward_test';
    const { process: listener, url } = await listen(['--secret', key, '--forward', appUrl]);
    const body = Buffer.from('{"event":"conversion.succeeded","data":{"id":"cnv_fwd"}}');
    appStatus = 503;
    const refused = await fetch(url, { method: 'POST', body, headers: { 'x-service-signature': sign(body, key), 'x-service-delivery': 'd-fwd' } });
    assert.equal(refused.status, 503);
    assert.equal(await refused.text(), 'app says 503');
    appStatus = 200;
    await listener.waitFor(() => /→ forwarded: 503/.test(listener.stdout()), 'the forward status');
    listener.child.kill('SIGINT');
    assert.equal(await listener.exited, 0);

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { process: second, url: secondUrl } = await listen(['--secret', key, '--forward', deadUrl]);
    const failed = await post(secondUrl, body, { 'x-service-signature': sign(body, key) });
    assert.equal(failed.status, 502);
    assert.equal(failed.json.error?.code, 'forward_failed');
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
  });

  it('needs a secret (exit 2) and reports a port in use (exit 1)', async () => {
    const noSecret = await spawnConv(['webhook', 'listen', '--port', '0'], { env: env() });
    assert.equal(noSecret.code, 2);
    assert.match(noSecret.stderr, /a webhook secret is needed/);
    const badForward = await spawnConv(['webhook', 'listen', '--secret', 's', '--forward', 'ftp://x'], { env: env() });
    assert.equal(badForward.code, 2);
    const busy = http.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as AddressInfo).port;
    const inUse = await spawnConv(['webhook', 'listen', '--secret', 's', '--port', String(port)], { env: env() });
    await new Promise<void>((resolve) => busy.close(() => resolve()));
    assert.equal(inUse.code, 1);
    assert.match(inUse.stderr, /^error: address_in_use: port \d+ on 127\.0\.0\.1 is in use/);
  });
});
