/**
 * deploy/nginx.conf, as shipped (only ports, certificate paths and the upstream port changed to
 * a test's), in front of the real daemon configured like deploy/convd.json: links carry the
 * public host and https, a large upload streams through, `wait` is not cut, the operations
 * endpoints stay internal. Needs an nginx binary; skipped where there is none.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { ROOT, parseLogLines, pngUpload, slowPng, smallPng, startConvd, tempDir, waitUntil, type Convd } from '../helpers/ops-support.ts';

const run = promisify(execFile);
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((path) => existsSync(path));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * An https request to nginx as a client of convert.example.com would make it, from 127.0.0.2:
 * not nginx's own address (127.0.0.1, the trusted proxy), so the client is told apart from it.
 */
function viaProxy(port: number, ca: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, ca, servername: 'convert.example.com', localAddress: '127.0.0.2', headers: { host: 'convert.example.com', ...headers }, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function formBytes(form: FormData): Promise<{ type: string; body: Buffer }> {
  const response = new Response(form);
  return { type: response.headers.get('content-type')!, body: Buffer.from(await response.arrayBuffer()) };
}

describe('deploy/nginx.conf in front of convd', { skip: NGINX ? false : 'no nginx binary' }, () => {
  let dir: string;
  let daemon: Convd;
  let nginx: ChildProcess;
  let port: number;
  let ca: string;

  before(async () => {
    dir = await tempDir();
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=convert.example.com', '-addext', 'subjectAltName=DNS:convert.example.com', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
    ca = await readFile(join(dir, 'cert.pem'), 'utf8');
    daemon = await startConvd({ args: ['--trusted-proxy', '127.0.0.1,::1', '--log-level', 'info'] });
    port = await freePort();
    const redirectPort = await freePort();
    const shipped = await readFile(join(ROOT, 'deploy', 'nginx.conf'), 'utf8');
    const site = shipped
      .replace('server 127.0.0.1:7700;', `server 127.0.0.1:${new URL(daemon.url).port};`)
      .replace(/listen \[::\]:\d+[^;]*;\n/g, '')
      .replace('listen 80;', `listen 127.0.0.1:${redirectPort};`)
      .replace('listen 443 ssl http2;', `listen 127.0.0.1:${port} ssl http2;`)
      .replace('/etc/letsencrypt/live/convert.example.com/fullchain.pem', join(dir, 'cert.pem'))
      .replace('/etc/letsencrypt/live/convert.example.com/privkey.pem', join(dir, 'key.pem'));
    assert.ok(site.includes(`127.0.0.1:${port} ssl`) && site.includes(join(dir, 'cert.pem')), 'the shipped file still has the lines this test adapts');
    await writeFile(join(dir, 'site.conf'), site);
    await writeFile(join(dir, 'nginx.conf'), `
      worker_processes 1;
      pid ${join(dir, 'nginx.pid')};
      error_log ${join(dir, 'error.log')} warn;
      user root;
      events { worker_connections 256; }
      http {
        access_log off;
        client_body_temp_path ${join(dir, 'body')};
        proxy_temp_path ${join(dir, 'proxy')};
        fastcgi_temp_path ${join(dir, 'fastcgi')};
        uwsgi_temp_path ${join(dir, 'uwsgi')};
        scgi_temp_path ${join(dir, 'scgi')};
        include ${join(dir, 'site.conf')};
      }`);
    await run(NGINX!, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')]);
    nginx = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' });
    await waitUntil('nginx to listen', async () => {
      try {
        return (await viaProxy(port, ca, 'GET', '/v1/openapi.json', {})).status === 200 ? true : undefined;
      } catch {
        return undefined;
      }
    });
  });
  after(async () => {
    nginx?.kill('SIGQUIT');
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('links and Location carry the public https address; the log has the client', async () => {
    const { type, body } = await formBytes(pngUpload(await smallPng()));
    const answer = await viaProxy(port, ca, 'POST', '/v1/conversions', { authorization: `Bearer ${daemon.apiKey}`, 'content-type': type, 'x-forwarded-for': '198.51.100.7' }, body);
    assert.equal(answer.status, 202, answer.body);
    const id = (JSON.parse(answer.body) as { id: string }).id;
    assert.equal(answer.headers.location, `https://convert.example.com/v1/conversions/${id}`);
    // nginx appends the real peer to what the client sent: convd takes the right-most address
    // that is not the trusted proxy, so a client cannot pass itself off as 198.51.100.7.
    await waitUntil('the request line', () => parseLogLines(daemon.stderr()).find((l) => l.event === 'request' && l.method === 'POST'));
    const line = parseLogLines(daemon.stderr()).find((l) => l.event === 'request' && l.method === 'POST')!;
    assert.equal(line.client, '127.0.0.2');
  });

  it('streams a large upload through (no nginx 413 below the plans\' limits) and holds a long wait', async () => {
    const big = await slowPng(2600); // ~20 MB, above nginx's default 1 MB body limit
    const { type, body } = await formBytes(pngUpload(big, 'big.png', { target: 'webp', wait: '30' }));
    assert.ok(body.length > 15 * 1024 * 1024);
    const answer = await viaProxy(port, ca, 'POST', '/v1/conversions', { authorization: `Bearer ${daemon.apiKey}`, 'content-type': type }, body);
    assert.equal(answer.status, 200, answer.body.slice(0, 300));
    assert.equal((JSON.parse(answer.body) as { status: string }).status, 'succeeded');
  });

  it('keeps /metrics, /readyz and /healthz away from the outside', async () => {
    for (const path of ['/metrics', '/readyz', '/healthz']) assert.equal((await viaProxy(port, ca, 'GET', path, {})).status, 403, path);
  });
});
