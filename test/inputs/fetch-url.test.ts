import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { RequestFilteringHttpAgent } from 'request-filtering-agent';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { BlockedAddressError, blockedAddressReason, isPublicAddress, networkList } from '../../src/inputs/address-policy.ts';
import { fetchUrlToFile, isFetchableUrl, nameFromUrl, type FetchOptions } from '../../src/inputs/fetch-url.ts';
import { createGuardedLookup, type ResolveAll } from '../../src/inputs/guarded-lookup.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface TestServer {
  port: number;
  /** TCP connections accepted so far: a blocked fetch must leave this at 0. */
  connections: number;
  requests: string[];
  open: Set<Socket>;
  close(): Promise<void>;
}

async function startServer(handler: Handler, host = '127.0.0.1'): Promise<TestServer> {
  const open = new Set<Socket>();
  const server = http.createServer((req, res) => {
    state.requests.push(req.url ?? '');
    handler(req, res);
  });
  const state: TestServer = {
    port: 0,
    connections: 0,
    requests: [],
    open,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('connection', (socket: Socket) => {
    state.connections += 1;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/** The server saw every client socket close: the fetcher left nothing open. */
async function waitUntilNoConnections(server: TestServer, withinMs = 2000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (server.open.size > 0) {
    if (Date.now() > deadline) assert.fail(`${server.open.size} connection(s) still open after ${withinMs} ms`);
    await sleep(10);
  }
}

/** File descriptors of this process that point at `path` (Linux /proc; empty elsewhere). */
function handlesTo(path: string): string[] {
  if (!existsSync('/proc/self/fd')) return [];
  const found: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target === path || target === `${path} (deleted)`) found.push(fd);
    } catch {
      // the fd of readdir itself is gone by now
    }
  }
  return found;
}

async function expectFailure(promise: Promise<unknown>, code: string, message?: RegExp): Promise<ConversionFailure> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ConversionFailure, `expected a ConversionFailure, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return error;
  }
  assert.fail(`expected ${code}, but the fetch succeeded`);
}

let dir: string;
let counter = 0;
const dest = (): string => join(dir, `download-${++counter}.bin`);
const trusted = (extra: Partial<FetchOptions> = {}): FetchOptions => ({
  maxBytes: 10 * 2 ** 20,
  timeoutMs: 5000,
  allowPrivate: true,
  ...extra,
});

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-fetch-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('fetchUrlToFile: downloads', () => {
  const body = randomBytes(300_000);
  let server: TestServer;
  before(async () => {
    server = await startServer((req, res) => {
      if (req.url?.split('?')[0] === '/file.bin') {
        res.writeHead(200, { 'content-type': 'application/x-test', 'content-length': body.length });
        res.end(body);
      } else if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(body.subarray(0, 1000));
        setTimeout(() => res.end(body.subarray(1000, 2000)), 20);
      } else if (req.url === '/gzip') {
        // The stored file is the entity, decoded, as a browser would save it.
        res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/octet-stream' });
        res.end(gzipSync(body));
      } else if (req.url === '/a') {
        res.writeHead(302, { location: '/b' }).end();
      } else if (req.url === '/b') {
        res.writeHead(301, { location: `http://127.0.0.1:${server.port}/file.bin?x=1` }).end();
      } else if (req.url === '/loop') {
        res.writeHead(302, { location: '/loop' }).end();
      } else if (req.url === '/to-file') {
        res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      } else if (req.url === '/to-ftp') {
        res.writeHead(302, { location: `ftp://127.0.0.1:${server.port}/file.bin` }).end();
      } else if (req.url === '/missing') {
        res.writeHead(404).end('not here');
      } else if (req.url === '/truncated') {
        res.writeHead(200, { 'content-length': 100 });
        res.write(Buffer.alloc(50));
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.writeHead(500).end();
      }
    });
  });
  after(() => server.close());

  it('stores the body byte for byte and reports size, type and final URL', async () => {
    const path = dest();
    const result = await fetchUrlToFile(`http://127.0.0.1:${server.port}/file.bin`, path, trusted());
    assert.deepEqual(result, {
      bytes: body.length,
      contentType: 'application/x-test',
      finalUrl: `http://127.0.0.1:${server.port}/file.bin`,
    });
    assert.ok((await readFile(path)).equals(body));
    assert.deepEqual(handlesTo(path), []);
    await waitUntilNoConnections(server);
  });

  it('stores a chunked body without Content-Length', async () => {
    const path = dest();
    const result = await fetchUrlToFile(`http://127.0.0.1:${server.port}/chunked`, path, trusted());
    assert.equal(result.bytes, 2000);
    assert.ok((await readFile(path)).equals(body.subarray(0, 2000)));
  });

  it('decodes a gzip Content-Encoding', async () => {
    const path = dest();
    const result = await fetchUrlToFile(`http://127.0.0.1:${server.port}/gzip`, path, trusted());
    assert.equal(result.bytes, body.length);
    assert.ok((await readFile(path)).equals(body));
  });

  it('follows a redirect chain between allowed addresses', async () => {
    const path = dest();
    const result = await fetchUrlToFile(`http://127.0.0.1:${server.port}/a`, path, trusted());
    assert.equal(result.finalUrl, `http://127.0.0.1:${server.port}/file.bin?x=1`);
    assert.ok((await readFile(path)).equals(body));
  });

  it('refuses redirects to file: and ftp:', async () => {
    for (const [route, scheme] of [['/to-file', 'file:'], ['/to-ftp', 'ftp:']] as const) {
      const path = dest();
      await expectFailure(
        fetchUrlToFile(`http://127.0.0.1:${server.port}${route}`, path, trusted()),
        'fetch_failed',
        new RegExp(`unsupported scheme ${scheme}`),
      );
      assert.equal(existsSync(path), false);
    }
  });

  it('stops after maxRedirects', async () => {
    const path = dest();
    const before = server.requests.length;
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/loop`, path, trusted({ maxRedirects: 2 })),
      'fetch_failed',
      /too many redirects .*more than 2/,
    );
    assert.equal(server.requests.length - before, 3); // the first request and two redirects
    assert.equal(existsSync(path), false);
  });

  it('fails a 404 with the status and the host', async () => {
    const path = dest();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/missing`, path, trusted()),
      'fetch_failed',
      new RegExp(`^HTTP 404 from 127\\.0\\.0\\.1:${server.port}$`),
    );
    assert.equal(existsSync(path), false);
    await waitUntilNoConnections(server);
  });

  it('fails a body cut short before its Content-Length', async () => {
    const path = dest();
    await expectFailure(fetchUrlToFile(`http://127.0.0.1:${server.port}/truncated`, path, trusted()), 'fetch_failed');
    assert.equal(existsSync(path), false);
  });

  it('fails when nothing listens on the port', async () => {
    const closed = await startServer(() => undefined);
    const port = closed.port;
    await closed.close();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${port}/x`, dest(), trusted()),
      'fetch_failed',
      /connection refused/,
    );
  });

  it('reports an unwritable destination as a local error, not the server\'s', async () => {
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/file.bin`, join(dir, 'no-such-dir', 'x'), trusted()),
      'internal_error',
      /cannot write the download to disk: ENOENT/,
    );
  });
});

describe('fetchUrlToFile: SSRF guard with allowPrivate=false', () => {
  let server: TestServer;
  let server6: TestServer | undefined;
  before(async () => {
    const ok: Handler = (_req, res) => res.end('secret');
    server = await startServer(ok);
    try {
      server6 = await startServer(ok, '::1'); // loopback too, so a leak to [::1] would be seen
    } catch {
      server6 = undefined; // no IPv6 loopback here: the message check below still applies
    }
  });
  after(async () => {
    await server.close();
    await server6?.close();
  });

  const publicOnly: FetchOptions = { maxBytes: 2 ** 20, timeoutMs: 5000, allowPrivate: false };

  it('blocks every spelling of loopback before connecting', async () => {
    const p = (): number => server.port;
    const cases: [url: string, address: RegExp][] = [
      [`http://127.0.0.1:${p()}/`, /127\.0\.0\.1/],
      [`http://localhost:${p()}/`, /(127\.0\.0\.1|::1) \(resolved from localhost\)/],
      [`http://[::ffff:127.0.0.1]:${p()}/`, /::ffff:7f00:1/],
      [`http://2130706433:${p()}/`, /127\.0\.0\.1/], // decimal
      [`http://0177.0.0.1:${p()}/`, /127\.0\.0\.1/], // octal
      [`http://0x7f.1:${p()}/`, /127\.0\.0\.1/], // hex, short form
      [`http://[::1]:${server6?.port ?? p()}/`, /::1/],
    ];
    for (const [url, address] of cases) {
      const path = dest();
      const failure = await expectFailure(fetchUrlToFile(url, path, publicOnly), 'fetch_failed', /^blocked: /);
      assert.match(failure.message, address, url);
      assert.match(failure.message, /not a public address \((loopback|IPv4-embedding)/, url);
      assert.equal(existsSync(path), false, url);
    }
    assert.equal(server.connections, 0, 'the IPv4 server was contacted');
    assert.equal(server6?.connections ?? 0, 0, 'the IPv6 server was contacted');
  });

  it('the same server is reachable when private addresses are allowed (the test above can fail)', async () => {
    const path = dest();
    await fetchUrlToFile(`http://localhost:${server.port}/`, path, { ...publicOnly, allowPrivate: true });
    assert.equal(await readFile(path, 'utf8'), 'secret');
  });
});

describe('fetchUrlToFile: the operator\'s own private networks (url_allow_networks)', () => {
  // Linux answers on all of 127/8: 127.0.0.2 stands for an internal file server, 127.0.0.1 for
  // everything else private, which must stay unreachable, redirects included.
  let internal: TestServer;
  let other: TestServer;
  before(async () => {
    other = await startServer((_req, res) => res.end('other'));
    internal = await startServer((req, res) => {
      if (req.url === '/to-other') res.writeHead(302, { location: `http://127.0.0.1:${other.port}/` }).end();
      else if (req.url === '/to-localhost') res.writeHead(302, { location: `http://localhost:${other.port}/` }).end();
      else if (req.url === '/to-metadata') res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      else res.end('internal');
    }, '127.0.0.2');
  });
  after(async () => {
    await internal.close();
    await other.close();
  });
  const allowed: FetchOptions = { maxBytes: 2 ** 20, timeoutMs: 5000, allowPrivate: false, allowedNetworks: ['127.0.0.2/32'] };

  it('reaches an allowed address, by literal and by a range', async () => {
    const path = dest();
    await fetchUrlToFile(`http://127.0.0.2:${internal.port}/`, path, allowed);
    assert.equal(await readFile(path, 'utf8'), 'internal');
    await fetchUrlToFile(`http://127.0.0.2:${internal.port}/`, dest(), { ...allowed, allowedNetworks: ['127.0.0.0/30'] });
  });

  it('refuses a redirect from the allowed host to another private address, by literal or by name', async () => {
    for (const route of ['/to-other', '/to-localhost']) {
      const failure = await expectFailure(fetchUrlToFile(`http://127.0.0.2:${internal.port}${route}`, dest(), allowed), 'fetch_failed', /^blocked: /);
      assert.match(failure.message, /loopback/, route);
    }
    await expectFailure(fetchUrlToFile(`http://127.0.0.2:${internal.port}/to-metadata`, dest(), allowed), 'fetch_failed', /cloud metadata/);
    assert.equal(other.connections, 0, 'the other private server was contacted');
  });

  it('never lets the cloud metadata address through, even inside an allowed range', () => {
    const list = networkList(['169.254.0.0/16', '10.0.0.0/8', 'fd00::/8', '100.64.0.0/10']);
    for (const metadata of ['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::23', 'fd00:ec2::254']) {
      assert.equal(blockedAddressReason(metadata, list), 'cloud metadata', metadata);
    }
    assert.equal(blockedAddressReason('169.254.1.1', list), 'link-local', 'link-local is never let through');
    assert.equal(blockedAddressReason('100.64.1.1', list), null);
    assert.equal(blockedAddressReason('10.1.2.3', list), null);
    assert.equal(blockedAddressReason('::ffff:10.1.2.3', list), null, 'the same host, IPv4-mapped');
    assert.equal(blockedAddressReason('fd00::5', list), null);
    assert.equal(blockedAddressReason('192.168.1.1', list), 'private (RFC 1918)');
  });
});

describe('address classifier', () => {
  it('blocks private, loopback, link-local, metadata, CGNAT, multicast, reserved and IPv6 local ranges', () => {
    const blocked = [
      '10.0.0.1', '172.16.0.1', '172.31.255.254', '192.168.1.1', '100.64.0.1', '100.127.255.254',
      '169.254.169.254', '169.254.1.1', '127.0.0.1', '127.8.9.10', '0.0.0.0', '0.1.2.3', '224.0.0.1',
      '239.255.255.250', '240.0.0.1', '255.255.255.255', '192.0.2.1', '198.18.0.1',
      '::1', '::', 'fd00::1', 'fc00::1', 'fe80::1', 'fec0::1', 'ff02::1', 'fd00:ec2::254',
      '::ffff:10.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', '::7f00:1',
      '64:ff9b::a00:1', '2002:a00:1::1', '2001:db8::1', '2001::1', '100::1', '[::1]', 'fe80::1%lo',
    ];
    for (const address of blocked) assert.notEqual(blockedAddressReason(address), null, address);
    assert.equal(blockedAddressReason('169.254.169.254'), 'cloud metadata');
    assert.equal(blockedAddressReason('100.64.0.1'), 'shared/CGNAT (RFC 6598)');
    assert.equal(blockedAddressReason('fd00::1'), 'unique-local (RFC 4193)');
    assert.equal(blockedAddressReason('::ffff:10.0.0.1'), 'private (RFC 1918)');
  });

  it('allows public addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '100.128.0.1', '172.32.0.1', '2606:4700::1', '2001:4860:4860::8888']) {
      assert.equal(blockedAddressReason(address), null, address);
      assert.ok(isPublicAddress(address));
    }
  });

  it('refuses anything that is not an IP address', () => {
    assert.equal(blockedAddressReason('example.com'), 'not an IP address');
  });
});

describe('lookup guard (every resolved address, as used for redirects too)', () => {
  const fake = (table: Record<string, LookupAddress[]>): ResolveAll => (hostname, _options, callback) => {
    setImmediate(() => callback(null, table[hostname] ?? []));
  };
  const lookup = createGuardedLookup(fake({
    'rebind.test': [{ address: '8.8.8.8', family: 4 }, { address: '10.0.0.1', family: 4 }],
    'ula.test': [{ address: 'fd12:3456::1', family: 6 }],
    'public.test': [{ address: '2606:4700::1', family: 6 }, { address: '1.1.1.1', family: 4 }],
  }));
  const call = (host: string, all: boolean) =>
    new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) => {
      lookup(host, { all }, (error, address, family) => resolve({ error, address, family }));
    });

  it('refuses a host when any of its addresses is not public', async () => {
    const rebind = await call('rebind.test', false);
    assert.ok(rebind.error instanceof BlockedAddressError);
    assert.match(rebind.error.message, /^blocked: 10\.0\.0\.1 \(resolved from rebind\.test\) is not a public address/);
    const ula = await call('ula.test', true);
    assert.ok(ula.error instanceof BlockedAddressError);
  });

  it('passes public addresses through in the shape asked for', async () => {
    assert.deepEqual(await call('public.test', false), { error: null, address: '2606:4700::1', family: 6 });
    const all = await call('public.test', true);
    assert.deepEqual(all.address, [{ address: '2606:4700::1', family: 6 }, { address: '1.1.1.1', family: 4 }]);
  });

  it('reports a host without addresses as not found', async () => {
    const none = await call('nothing.test', false);
    assert.equal((none.error as NodeJS.ErrnoException).code, 'ENOTFOUND');
  });
});

describe('request-filtering-agent (second layer) covers CGNAT, ULA and metadata too', () => {
  it('refuses the connection before any socket is opened', () => {
    // Swap the real connect for a recorder, so a miss in the agent is seen without any network traffic.
    const original = http.Agent.prototype.createConnection;
    const attempted: string[] = [];
    http.Agent.prototype.createConnection = function (options: { host?: string }) {
      attempted.push(String(options.host));
      throw new Error('a connection was attempted');
    } as typeof original;
    try {
      const agent = new RequestFilteringHttpAgent({ allowPrivateIPAddress: false, allowMetaIPAddress: false });
      for (const host of ['100.64.0.1', 'fd00::1', 'fc00::1', '169.254.169.254', '10.0.0.1', '::ffff:127.0.0.1', '0.0.0.0']) {
        let refused: Error | null = null;
        agent.createConnection({ host, port: 80 }, (error) => {
          refused = error;
        });
        assert.ok(refused !== null, `${host} was not refused`);
      }
      agent.destroy();
    } finally {
      http.Agent.prototype.createConnection = original;
    }
    assert.deepEqual(attempted, []);
  });
});

describe('fetchUrlToFile: limits, time-outs and cancellation', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer((req, res) => {
      if (req.url === '/big-chunked') {
        res.writeHead(200);
        let sent = 0;
        const tick = setInterval(() => {
          if (res.destroyed || sent >= 100) return clearInterval(tick);
          res.write(Buffer.alloc(1000, 7));
          sent += 1;
        }, 2);
        res.on('close', () => clearInterval(tick));
      } else if (req.url?.startsWith('/exact')) {
        res.writeHead(200); // chunked: the cap is checked on the stream only
        res.end(Buffer.alloc(2048, 1));
      } else if (req.url === '/lying-length') {
        res.writeHead(200, { 'content-length': 10 * 2 ** 20 });
        res.write(Buffer.alloc(10)); // then hangs
      } else if (req.url === '/stalls') {
        res.writeHead(200);
        res.write(Buffer.alloc(100)); // never ends
      } else if (req.url === '/silent') {
        // never answers at all
      } else {
        res.writeHead(404).end();
      }
    });
  });
  after(() => server.close());

  it('stops a chunked body at maxBytes and deletes the partial file', async () => {
    const path = dest();
    const started = Date.now();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/big-chunked`, path, trusted({ maxBytes: 5000 })),
      'file_too_large',
      /limit of 0\.0048 MB \(5000 bytes\)/,
    );
    assert.ok(Date.now() - started < 2000, 'the download was not stopped at the cap');
    assert.equal(existsSync(path), false);
    assert.deepEqual(handlesTo(path), []);
    await waitUntilNoConnections(server);
  });

  it('accepts a body of exactly maxBytes and refuses one byte less of room', async () => {
    const path = dest();
    assert.equal((await fetchUrlToFile(`http://127.0.0.1:${server.port}/exact`, path, trusted({ maxBytes: 2048 }))).bytes, 2048);
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/exact2`, dest(), trusted({ maxBytes: 2047 })),
      'file_too_large',
    );
  });

  it('states the limit in MB (2^20 bytes)', async () => {
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/lying-length`, dest(), trusted({ maxBytes: 2 ** 20 })),
      'file_too_large',
      /announces 10485760 bytes.* limit of 1 MB$/,
    );
  });

  it('refuses a too large Content-Length at once, without waiting for the body', async () => {
    const path = dest();
    const started = Date.now();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/lying-length`, path, trusted({ maxBytes: 1000, timeoutMs: 5000 })),
      'file_too_large',
    );
    assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
    assert.equal(existsSync(path), false);
    await waitUntilNoConnections(server);
  });

  it('gives up on a body that never ends after about timeoutMs', async () => {
    const path = dest();
    const started = Date.now();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/stalls`, path, trusted({ timeoutMs: 300 })),
      'fetch_failed',
      /^timed out after 0\.3 s while fetching from 127\.0\.0\.1:\d+$/,
    );
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 290 && elapsed < 1500, `took ${elapsed} ms`);
    assert.equal(existsSync(path), false);
    assert.deepEqual(handlesTo(path), []);
    await waitUntilNoConnections(server);
  });

  it('gives up on a server that never answers', async () => {
    const started = Date.now();
    await expectFailure(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/silent`, dest(), trusted({ timeoutMs: 300 })),
      'fetch_failed',
      /timed out/,
    );
    assert.ok(Date.now() - started < 1500);
    await waitUntilNoConnections(server);
  });

  it('rejects with the signal\'s reason when aborted mid-download', async () => {
    const path = dest();
    const controller = new AbortController();
    const reason = new Error('cancelled by the test');
    setTimeout(() => controller.abort(reason), 100);
    await assert.rejects(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/stalls`, path, trusted({ signal: controller.signal })),
      (error) => error === reason,
    );
    assert.equal(existsSync(path), false);
    assert.deepEqual(handlesTo(path), []);
    await waitUntilNoConnections(server);
  });

  it('does not start when the signal is already aborted', async () => {
    const before = server.connections;
    const reason = new Error('too late');
    const path = dest();
    await assert.rejects(
      fetchUrlToFile(`http://127.0.0.1:${server.port}/exact`, path, trusted({ signal: AbortSignal.abort(reason) })),
      (error) => error === reason,
    );
    assert.equal(server.connections, before);
    assert.equal(existsSync(path), false);
  });
});

describe('URL checks', () => {
  it('fetchUrlToFile refuses other schemes and credentials without a request', async () => {
    for (const [url, message] of [
      ['ftp://127.0.0.1/x', /unsupported URL scheme ftp:/],
      ['file:///etc/passwd', /unsupported URL scheme file:/],
      ['http://user:pw@127.0.0.1/x', /credentials/],
      ['/relative/path', /not an absolute URL/],
    ] as const) {
      const path = dest();
      await expectFailure(fetchUrlToFile(url, path, trusted()), 'fetch_failed', message);
      assert.equal(existsSync(path), false);
    }
  });

  it('isFetchableUrl accepts absolute http(s) URLs with a host and no credentials', () => {
    for (const url of ['http://example.com/a.png', 'https://example.com:8443/x?y=1', 'HTTPS://EXAMPLE.COM']) {
      assert.equal(isFetchableUrl(url), true, url);
    }
    for (const url of ['ftp://example.com/a', 'file:///etc/passwd', 'javascript:alert(1)', 'data:text/plain,hi',
      'https://user:pass@example.com/', 'https://user@example.com/', 'example.com/a.png', '', 'http://']) {
      assert.equal(isFetchableUrl(url), false, url);
    }
  });
});

describe('nameFromUrl', () => {
  it('takes the decoded last path segment and ignores query and fragment', () => {
    assert.equal(nameFromUrl('https://example.com/files/report%20final.pdf?token=abc#page=2'), 'report final.pdf');
    assert.equal(nameFromUrl('https://example.com/%C3%BCber.png'), 'über.png');
    assert.equal(nameFromUrl('https://example.com/dir/photo.jpg/'), 'photo.jpg');
  });

  it('falls back to download when there is no usable name', () => {
    for (const url of ['https://example.com', 'https://example.com/', 'https://example.com///', 'https://example.com/..',
      'https://example.com/%2e%2e', 'https://example.com/%2F', 'https://example.com/%00%01', 'not a url']) {
      assert.equal(nameFromUrl(url), 'download', url);
    }
  });

  it('never lets a separator, .. or a control character through', () => {
    const names = [
      nameFromUrl('https://example.com/a/..%2F..%2Fetc%2Fpasswd'),
      nameFromUrl('https://example.com/x/%2e%2e%5cwindows%5csystem.ini'),
      nameFromUrl('https://example.com/evil%0d%0aname%09.txt'),
      nameFromUrl('https://example.com/invoice%E2%80%AEfdp.exe'),
      nameFromUrl('https://example.com/.hidden'),
    ];
    for (const name of names) {
      assert.doesNotMatch(name, /[/\\]|\.\.|[\u0000-\u001f\u007f\u202e]|^\./, name);
    }
    assert.equal(names[0], '_._etc_passwd');
    assert.equal(names[2], 'evilname.txt');
    assert.equal(names[4], 'hidden');
  });

  it('keeps malformed escapes as they are', () => {
    assert.equal(nameFromUrl('https://example.com/100%25.txt'), '100%.txt');
    assert.equal(nameFromUrl('https://example.com/bad%E0%A4%A.txt'), 'bad%E0%A4%A.txt');
  });

  it('cuts long names to 200 characters and keeps the extension', () => {
    const long = nameFromUrl(`https://example.com/${'a'.repeat(300)}.pdf`);
    assert.equal(long.length, 200);
    assert.ok(long.endsWith('aaa.pdf'));
    const emoji = nameFromUrl(`https://example.com/${'😀'.repeat(250)}`);
    assert.equal(Array.from(emoji).length, 200);
    assert.doesNotMatch(emoji, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no lone high surrogate
  });
});
