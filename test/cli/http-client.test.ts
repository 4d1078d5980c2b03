import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { EventEmitter, once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import busboy from 'busboy';
import { HttpClient } from '../../src/client/http-client.ts';
import { parseRetryAfter, retryDelay } from '../../src/client/retry.ts';
import { filenameFromContentDisposition } from '../../src/client/content-disposition.ts';
import { normalizeBaseUrl } from '../../src/client/base-url.ts';
import { ClientError } from '../../src/client/types.ts';
import { fullCollection } from '../helpers/full-gc.ts';

/**
 * HttpClient against a real HTTP server on 127.0.0.1 whose answers each test scripts: what goes
 * over the wire (headers, multipart body, query) and how answers map back (errors, retries).
 */

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  fields: Record<string, string>;
  file: { name: string; bytes: Buffer } | null;
  json: unknown;
  /** Time (ms since the request began) at which the first file byte arrived. */
  firstFileByteAt: number | null;
}

type Handler = (seen: Seen, res: http.ServerResponse, index: number) => void;

let server: http.Server;
let baseUrl: string;
let handler: Handler = (_seen, res) => res.end();
let seen: Seen[] = [];
/** Emits 'file-data' when a file part's first bytes reach the server. */
const serverEvents = new EventEmitter();
/** When set, request bodies are counted and dropped instead of parsed. */
let discardBodies = false;
let discardedBytes = 0;

function readRequest(req: http.IncomingMessage): Promise<Seen> {
  const started = Date.now();
  const record: Seen = { method: req.method!, url: req.url!, headers: req.headers, fields: {}, file: null, json: null, firstFileByteAt: null };
  const type = req.headers['content-type'] ?? '';
  return new Promise((resolve, reject) => {
    if (discardBodies) {
      req.on('data', (chunk: Buffer) => (discardedBytes += chunk.length));
      req.on('end', () => resolve(record));
      return;
    }
    if (type.startsWith('multipart/form-data')) {
      const parser = busboy({ headers: req.headers });
      parser.on('field', (name, value) => (record.fields[name] = value));
      parser.on('file', (_name, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => {
          if (record.firstFileByteAt === null) {
            record.firstFileByteAt = Date.now() - started;
            serverEvents.emit('file-data');
          }
          chunks.push(chunk);
        });
        stream.on('end', () => (record.file = { name: info.filename ?? '', bytes: Buffer.concat(chunks) }));
      });
      parser.on('close', () => resolve(record));
      parser.on('error', reject);
      req.pipe(parser);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      if (text) record.json = JSON.parse(text);
      resolve(record);
    });
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const conversion = (overrides: Record<string, unknown> = {}) => ({
  id: 'cnv_1', object: 'conversion', status: 'queued', source: 'png', target: 'webp', variant: null, options: {},
  original_name: 'a.png', input_size: 3, progress: null, credits: 0, created_at: '2026-01-01T00:00:00.000Z',
  started_at: null, finished_at: null, result: null, error: null,
  links: { self: 'x', download: 'x/download' }, ...overrides,
});

function client(overrides: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}): HttpClient {
  return new HttpClient({ baseUrl, apiKey: 'cvk_test', userAgent: 'conv-test', retry: { baseDelayMs: 10 }, ...overrides });
}

let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'conv-http-client-'));
  server = http.createServer((req, res) => {
    readRequest(req).then(
      (record) => {
        seen.push(record);
        handler(record, res, seen.length - 1);
      },
      (error: Error) => {
        res.statusCode = 500;
        res.end(error.message);
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

function reset(next: Handler): void {
  seen = [];
  handler = next;
}

describe('HttpClient requests', () => {
  it('uploads a file as multipart with bearer key, fields, options and an Idempotency-Key', async () => {
    const path = join(dir, 'photo.png');
    const bytes = randomBytes(200_000);
    await writeFile(path, bytes);
    reset((_s, res) => sendJson(res, 202, conversion(), { location: '/v1/conversions/cnv_1' }));
    const c = client();
    const result = await c.createConversion({
      input: { kind: 'file', path }, target: 'webp', source: 'png', options: { quality: 80, strip: true }, wait: 5, variant: 'v',
    });
    await c.close();
    assert.equal(result.id, 'cnv_1');
    const [request] = seen;
    assert.ok(request);
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/v1/conversions');
    assert.equal(request.headers.authorization, 'Bearer cvk_test');
    assert.equal(request.headers['user-agent'], 'conv-test');
    assert.match(String(request.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
    assert.deepEqual(request.fields, { target: 'webp', source: 'png', variant: 'v', wait: '5', 'options[quality]': '80', 'options[strip]': 'true' });
    assert.equal(request.file?.name, 'photo.png');
    assert.ok(request.file?.bytes.equals(bytes), 'the uploaded bytes are the file');
    // The length is known from the file's size without reading it first.
    assert.ok(Number(request.headers['content-length']) > bytes.length);
  });

  it('streams an upload from a pipe: the server sees bytes before the input has ended', async () => {
    reset((_s, res) => sendJson(res, 202, conversion()));
    const input = new PassThrough();
    const c = client();
    const firstBytes = once(serverEvents, 'file-data');
    const pending = c.createConversion({ input: { kind: 'stream', stream: input, filename: 'in.png' }, target: 'webp' });
    input.write(Buffer.alloc(1000, 1));
    // The rest is written only once the first chunk has reached the server: a client that
    // buffered its input before sending would never get there.
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('no bytes reached the server while the input was open')), 5000).unref());
    await Promise.race([firstBytes, timeout]);
    input.end(Buffer.alloc(500, 2));
    await pending;
    await c.close();
    const request = seen[0]!;
    assert.equal(request.headers['transfer-encoding'], 'chunked', 'an input of unknown length goes out chunked');
    assert.equal(request.file?.bytes.length, 1500);
  });

  it('does not hold a large upload in memory', async () => {
    const path = join(dir, 'big.bin');
    const size = 96 * 1024 * 1024;
    await new Promise<void>((resolve, reject) => {
      const out = createWriteStream(path);
      const chunk = Buffer.alloc(1024 * 1024, 7);
      let written = 0;
      const write = () => {
        while (written < size) {
          written += chunk.length;
          if (!out.write(chunk)) return void out.once('drain', write);
        }
        out.end(resolve);
      };
      out.on('error', reject);
      write();
    });
    reset((_s, res) => sendJson(res, 202, conversion()));
    discardBodies = true;
    discardedBytes = 0;
    // What is alive, not what waits for the collector: a full collection before each look (the
    // chunks read and sent, dead at once, made a run on Node 24 measure 69 MiB; a buffered file
    // stays alive through every collection and is still seen whole).
    const alive = () => {
      fullCollection();
      return process.memoryUsage().arrayBuffers;
    };
    const baseline = alive();
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, alive())), 20);
    const c = client();
    try {
      await c.createConversion({ input: { kind: 'file', path }, target: 'webp' });
    } finally {
      clearInterval(sampler);
      discardBodies = false;
      await c.close();
      await rm(path);
    }
    const received = discardedBytes;
    assert.ok(received > size);
    // Buffering the file would hold all 96 MiB at once; the receiving server in this same process
    // holds some chunks in flight, so the bar is half the file.
    assert.ok(peak - baseline < size / 2, `upload buffered ${Math.round((peak - baseline) / 1048576)} MiB`);
  });

  it('sends a URL input as JSON with typed options', async () => {
    reset((_s, res) => sendJson(res, 202, conversion()));
    const c = client();
    await c.createConversion({
      input: { kind: 'url', url: 'https://example.com/a.png', filename: 'b.png' }, target: 'jpg', options: { quality: 50 },
      callbackUrl: 'https://hooks.example.com/x', idempotencyKey: 'my-key',
    });
    await c.close();
    const request = seen[0]!;
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['idempotency-key'], 'my-key');
    assert.deepEqual(request.json, {
      url: 'https://example.com/a.png', target: 'jpg', filename: 'b.png', callback_url: 'https://hooks.example.com/x', options: { quality: 50 },
    });
  });

  it('sends wait on GET, list queries, DELETE, formats and account', async () => {
    reset((s, res) => {
      if (s.url.startsWith('/v1/conversions?')) return sendJson(res, 200, { data: [], next_cursor: null });
      if (s.url === '/v1/formats') return sendJson(res, 200, { data: [{ source: 'png', targets: ['webp'] }] });
      if (s.url === '/v1/formats/png') return sendJson(res, 200, { source: 'png', data: [] });
      if (s.url === '/v1/account') return sendJson(res, 200, { plan: { id: 'free', name: 'Free' } });
      sendJson(res, 200, conversion());
    });
    const c = client();
    await c.getConversion('cnv_1', { wait: 30 });
    await c.getConversion('cnv/2');
    await c.listConversions({ status: 'failed', cursor: 'abc', limit: 5 });
    await c.deleteConversion('cnv_1');
    assert.deepEqual((await c.listFormats()).data, [{ source: 'png', targets: ['webp'] }]);
    assert.equal((await c.getFormat('png')).source, 'png');
    assert.equal((await c.getAccount()).plan.id, 'free');
    await c.close();
    assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), [
      'GET /v1/conversions/cnv_1?wait=30',
      'GET /v1/conversions/cnv%2F2',
      'GET /v1/conversions?status=failed&cursor=abc&limit=5',
      'DELETE /v1/conversions/cnv_1',
      'GET /v1/formats',
      'GET /v1/formats/png',
      'GET /v1/account',
    ]);
  });
});

describe('HttpClient errors', () => {
  it('maps the API error body to ClientError(code, message, status, details)', async () => {
    reset((_s, res) => sendJson(res, 413, { error: { code: 'file_too_large', message: 'too big', details: { max_upload_mb: 100 } } }));
    const c = client();
    await assert.rejects(c.getConversion('cnv_1'), (error: unknown) => {
      assert.ok(error instanceof ClientError);
      assert.equal(error.code, 'file_too_large');
      assert.equal(error.message, 'too big');
      assert.equal(error.status, 413);
      assert.deepEqual(error.details, { max_upload_mb: 100 });
      return true;
    });
    await c.close();
  });

  it('describes an answer that is not an API error from its status', async () => {
    reset((_s, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<h1>nginx</h1>');
    });
    const c = client();
    await assert.rejects(c.getAccount(), { name: 'ClientError', code: 'not_found', status: 404 });
    await c.close();
  });

  it('turns a refused connection into network_error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const c = new HttpClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'k', retry: { retries: 1, baseDelayMs: 10 } });
    await assert.rejects(c.getAccount(), (error: unknown) => {
      assert.ok(error instanceof ClientError);
      assert.equal(error.code, 'network_error');
      assert.equal(error.status, null);
      assert.equal(error.details?.cause, 'ECONNREFUSED');
      return true;
    });
    await c.close();
  });
});

describe('HttpClient retries', () => {
  it('retries a create after 503 with the same Idempotency-Key and the whole file again', async () => {
    const path = join(dir, 'retry.png');
    const bytes = randomBytes(50_000);
    await writeFile(path, bytes);
    reset((_s, res, index) => {
      if (index === 0) return sendJson(res, 503, { error: { code: 'api_disabled', message: 'maintenance' } }, { 'retry-after': '0' });
      sendJson(res, 202, conversion());
    });
    const c = client();
    await c.createConversion({ input: { kind: 'file', path }, target: 'webp' });
    await c.close();
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.headers['idempotency-key'], seen[1]!.headers['idempotency-key']);
    assert.ok(seen[1]!.file?.bytes.equals(bytes));
  });

  it('honours Retry-After on 429', async () => {
    reset((_s, res, index) => {
      if (index === 0) return sendJson(res, 429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '1' });
      sendJson(res, 200, conversion());
    });
    const c = client();
    const started = Date.now();
    await c.getConversion('cnv_1');
    await c.close();
    assert.equal(seen.length, 2);
    assert.ok(Date.now() - started >= 950, 'waited about the second the server asked for');
  });

  it('gives up at once when Retry-After exceeds the bound', async () => {
    reset((_s, res) => sendJson(res, 429, { error: { code: 'rate_limited', message: 'later' } }, { 'retry-after': '3600' }));
    const c = client({ retry: { maxRetryAfterMs: 5000 } });
    await assert.rejects(c.getAccount(), { code: 'rate_limited', status: 429 });
    await c.close();
    assert.equal(seen.length, 1);
  });

  it('stops after the configured number of retries', async () => {
    reset((_s, res) => sendJson(res, 502, { error: { code: 'bad_gateway', message: 'x' } }));
    const c = client({ retry: { retries: 2, baseDelayMs: 5 } });
    await assert.rejects(c.listFormats(), { status: 502 });
    await c.close();
    assert.equal(seen.length, 3);
  });

  it('does not repeat a DELETE after a 502 (it may have acted) but does after a 429', async () => {
    reset((_s, res) => sendJson(res, 502, { error: { code: 'bad_gateway', message: 'x' } }));
    const c = client();
    await assert.rejects(c.deleteConversion('cnv_1'), { status: 502 });
    assert.equal(seen.length, 1);
    reset((_s, res, index) => (index === 0
      ? sendJson(res, 429, { error: { code: 'rate_limited', message: 'x' } }, { 'retry-after': '0' })
      : sendJson(res, 200, conversion({ status: 'cancelled' }))));
    assert.equal((await c.deleteConversion('cnv_1')).status, 'cancelled');
    assert.equal(seen.length, 2);
    await c.close();
  });

  it('never repeats an upload read from a pipe', async () => {
    reset((_s, res) => sendJson(res, 503, { error: { code: 'api_disabled', message: 'x' } }, { 'retry-after': '0' }));
    const c = client();
    const input = new PassThrough();
    input.end('abc');
    await assert.rejects(c.createConversion({ input: { kind: 'stream', stream: input, filename: 'a.png' }, target: 'webp' }), { code: 'api_disabled' });
    await c.close();
    assert.equal(seen.length, 1);
  });
});

describe('HttpClient download', () => {
  it('streams the body with the name from Content-Disposition and the size', async () => {
    const body = randomBytes(100_000);
    reset((_s, res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(body.length),
        'content-disposition': `attachment; filename="fallback.webp"; filename*=UTF-8''%C3%BCber.webp`,
      });
      res.end(body);
    });
    const c = client();
    const download = await c.download('cnv_1');
    const chunks: Buffer[] = [];
    for await (const chunk of download.stream) chunks.push(chunk as Buffer);
    await c.close();
    assert.equal(download.filename, 'über.webp');
    assert.equal(download.size, body.length);
    assert.ok(Buffer.concat(chunks).equals(body));
    assert.equal(seen[0]!.url, '/v1/conversions/cnv_1/download');
  });

  it('maps a refused download to the API error', async () => {
    reset((_s, res) => sendJson(res, 409, { error: { code: 'not_ready', message: 'not yet' } }));
    const c = client();
    await assert.rejects(c.download('cnv_1'), { code: 'not_ready', status: 409 });
    await c.close();
  });
});

describe('client helpers', () => {
  it('retryDelay follows the retry classes', () => {
    const status = (s: number, after: number | null = null) => ({ kind: 'status' as const, status: s, retryAfterMs: after });
    const net = (code: string) => ({ kind: 'network' as const, code });
    const none = () => 0;
    assert.equal(retryDelay(status(429, 2000), 'safe', 1, undefined, none), 2000);
    assert.equal(retryDelay(status(429, 120_000), 'safe', 1, undefined, none), null);
    assert.equal(retryDelay(status(500), 'safe', 1, undefined, none), null);
    assert.equal(retryDelay(status(502), 'safe', 1, undefined, none), 250);
    assert.equal(retryDelay(status(502), 'safe', 3, undefined, none), 1000);
    assert.equal(retryDelay(status(502), 'safe', 4, undefined, none), null);
    assert.equal(retryDelay(status(502), 'unsafe', 1, undefined, none), null);
    assert.equal(retryDelay(status(503, 0), 'unsafe', 1, undefined, none), 0);
    assert.equal(retryDelay(net('ECONNRESET'), 'safe', 1, undefined, none), 250);
    assert.equal(retryDelay(net('ECONNRESET'), 'unsafe', 1, undefined, none), null);
    assert.equal(retryDelay(net('ECONNREFUSED'), 'unsafe', 1, undefined, none), 250);
    assert.equal(retryDelay(status(429, 0), 'once', 1, undefined, none), null);
  });

  it('parseRetryAfter reads seconds and HTTP dates', () => {
    assert.equal(parseRetryAfter('7'), 7000);
    assert.equal(parseRetryAfter(undefined), null);
    assert.equal(parseRetryAfter('soon'), null);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now), 10_000);
  });

  it('filenameFromContentDisposition prefers filename* and never returns a path', () => {
    assert.equal(filenameFromContentDisposition(`attachment; filename="a b.png"`), 'a b.png');
    assert.equal(filenameFromContentDisposition(`attachment; filename=plain.png`), 'plain.png');
    assert.equal(filenameFromContentDisposition(`attachment; filename="x.png"; filename*=UTF-8''%E2%82%AC.png`), '€.png');
    assert.equal(filenameFromContentDisposition(`attachment; filename*=iso-8859-1''%E4.txt`), 'ä.txt');
    assert.equal(filenameFromContentDisposition(`attachment; filename="../../etc/passwd"`), 'passwd');
    assert.equal(filenameFromContentDisposition(`attachment; filename=".."`), null);
    assert.equal(filenameFromContentDisposition(undefined), null);
  });

  it('normalizeBaseUrl appends /v1 to a bare origin and rejects what is not a base URL', () => {
    assert.equal(normalizeBaseUrl('http://127.0.0.1:7700'), 'http://127.0.0.1:7700/v1');
    assert.equal(normalizeBaseUrl('https://h.example/api/v1/'), 'https://h.example/api/v1');
    assert.throws(() => normalizeBaseUrl('ftp://x/v1'), TypeError);
    assert.throws(() => normalizeBaseUrl('localhost:7700'), TypeError);
    assert.throws(() => normalizeBaseUrl('http://u:p@h/v1'), TypeError);
  });
});
