/**
 * Behind a reverse proxy: X-Forwarded-Proto/-Host shape links and Location, X-Forwarded-For
 * the client address in the logs, but only when the peer is the configured trusted proxy.
 * And https served by convd itself from a certificate and key, reloaded by SIGHUP.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { call, httpsGet, pngUpload, smallPng, startConvd, tempDir, waitUntil, type Convd } from '../helpers/ops-support.ts';

const run = promisify(execFile);
const FORWARDED = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'convert.example.com', 'x-forwarded-for': '203.0.113.9, 127.0.0.1' };

async function submitVia(daemon: Convd, headers: Record<string, string>) {
  const answer = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng()), headers });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return answer;
}

function requestLines(daemon: Convd) {
  return daemon.logs().filter((l) => l.event === 'request' && l.route === '/v1/conversions' && l.method === 'POST');
}

describe('X-Forwarded-* from the trusted proxy', () => {
  let trusting: Convd;
  let other: Convd;
  let pinned: Convd;
  before(async () => {
    [trusting, other, pinned] = await Promise.all([
      // The test client connects from 127.0.0.1: that is the proxy here.
      startConvd({ args: ['--trusted-proxy', '127.0.0.1'] }),
      // Trusts another address: the same headers from 127.0.0.1 are a client's invention.
      startConvd({ args: ['--trusted-proxy', '10.0.0.0/8'] }),
      // A configured public URL wins over what a proxy says.
      startConvd({ args: ['--trusted-proxy', '127.0.0.1', '--public-url', 'https://files.example.org/convert'] }),
    ]);
  });
  after(async () => {
    await Promise.all([trusting.dispose(), other.dispose(), pinned.dispose()]);
  });

  it('builds links and Location from them, and logs the forwarded client', async () => {
    const answer = await submitVia(trusting, FORWARDED);
    const id = answer.body.id as string;
    assert.equal(answer.headers.get('location'), `https://convert.example.com/v1/conversions/${id}`);
    assert.equal(answer.body.links.download, `https://convert.example.com/v1/conversions/${id}/download`);
    const done = await call(trusting, `/v1/conversions/${id}?wait=20`, { headers: FORWARDED });
    assert.equal(done.body.result.download_url, `https://convert.example.com/v1/conversions/${id}/download`);
    const list = await call(trusting, '/v1/conversions', { headers: FORWARDED });
    assert.equal(list.body.data[0].links.self, `https://convert.example.com/v1/conversions/${id}`);
    const doc = await call(trusting, '/v1/openapi.json', { key: null, headers: FORWARDED });
    assert.equal(doc.body.servers[0].url, 'https://convert.example.com/v1');
    // The right-most address that is not the proxy itself.
    await waitUntil('the request line', () => requestLines(trusting)[0]);
    assert.equal(requestLines(trusting)[0]!.client, '203.0.113.9');
    // Without the headers the same proxy gets the bound address.
    const direct = await submitVia(trusting, {});
    assert.equal(direct.headers.get('location'), `${trusting.url}/v1/conversions/${direct.body.id}`);
  });

  it('ignores a forwarded host that is not a host name', async () => {
    const answer = await submitVia(trusting, { ...FORWARDED, 'x-forwarded-host': 'evil.example/phish?' });
    assert.equal(answer.headers.get('location'), `${trusting.url}/v1/conversions/${answer.body.id}`);
  });

  it('ignores them from any other peer', async () => {
    const answer = await submitVia(other, FORWARDED);
    assert.equal(answer.headers.get('location'), `${other.url}/v1/conversions/${answer.body.id}`);
    assert.ok(answer.body.links.self.startsWith(`${other.url}/v1/`));
    await waitUntil('the request line', () => requestLines(other)[0]);
    assert.equal(requestLines(other)[0]!.client, '127.0.0.1');
  });

  it('a configured public URL takes precedence', async () => {
    const answer = await submitVia(pinned, FORWARDED);
    assert.equal(answer.headers.get('location'), `https://files.example.org/convert/v1/conversions/${answer.body.id}`);
    await waitUntil('the request line', () => requestLines(pinned)[0]);
    assert.equal(requestLines(pinned)[0]!.client, '203.0.113.9', 'X-Forwarded-For still names the client');
  });
});

describe('TLS', () => {
  let dir: string;
  let daemon: Convd;

  async function selfSigned(name: string): Promise<{ cert: string; key: string }> {
    const cert = join(dir, `${name}.crt`);
    const key = join(dir, `${name}.key`);
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert]);
    return { cert, key };
  }

  before(async () => {
    dir = await tempDir();
    const first = await selfSigned('first');
    daemon = await startConvd({ args: ['--tls-cert', first.cert, '--tls-key', first.key] });
  });
  after(async () => {
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves https with the given certificate; links say https', async () => {
    assert.match(daemon.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = await readFile(join(dir, 'first.crt'), 'utf8');
    const health = await httpsGet(`${daemon.url}/healthz`, ca);
    assert.deepEqual([health.status, JSON.parse(health.body)], [200, { status: 'ok' }]);
    const account = await httpsGet(`${daemon.url}/v1/account`, ca, { authorization: `Bearer ${daemon.apiKey}` });
    assert.equal(account.status, 200);
    const doc = JSON.parse((await httpsGet(`${daemon.url}/v1/openapi.json`, ca)).body) as { servers: { url: string }[] };
    assert.equal(doc.servers[0]!.url, `${daemon.url}/v1`);
    // Plain http on the TLS port is not answered as if it were fine.
    await assert.rejects(fetch(`${daemon.url.replace('https:', 'http:')}/healthz`));
  });

  it('SIGHUP picks up a renewed certificate for new connections', async () => {
    const firstCa = await readFile(join(dir, 'first.crt'), 'utf8');
    const before = (await httpsGet(`${daemon.url}/healthz`, firstCa)).fingerprint;
    // A renewal writes new files where the old ones were (as certbot's deploy hook would).
    const renewed = await selfSigned('first');
    const renewedCa = await readFile(renewed.cert, 'utf8');
    daemon.signal('SIGHUP');
    await waitUntil('the reload', () => daemon.logs().find((l) => l.event === 'config.reloaded'));
    const after = await httpsGet(`${daemon.url}/healthz`, renewedCa);
    assert.equal(after.status, 200);
    assert.notEqual(after.fingerprint, before);
  });
});
