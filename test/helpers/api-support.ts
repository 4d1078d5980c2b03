/**
 * Shared pieces of the api-*.test.ts suites: test images, accounts made through the real admin
 * CLI, requests in the three content types, waiting on states, strict checks of the error shape,
 * a raw HTTP client for malformed requests, and a local input server whose responses the test
 * can hold back (for URL inputs, slow work and the `fetching` state).
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import type { AccountView, FormatDetails, FormatListing, ListPage } from '../../src/client/types.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import type { PlanId } from '../../src/model/plan.ts';
import { callAdminSocket } from '../../daemon/admin/socket.ts';
import { convdAdmin, type DaemonHandle } from './daemon.ts';

export type { AccountView, FormatDetails, FormatListing, ListPage, PublicConversion };

/** What a request needs: where, and with which key. A daemon handle is one (its bootstrap key). */
export interface Client {
  baseUrl: string;
  apiKey: string;
}

export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

export interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

export const END_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

// ---------------------------------------------------------------- images

/** A small solid PNG; real pixels, so conversions of it really run. */
export function png(width = 40, height = 30, background = '#c04020'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background } }).png().toBuffer();
}

/**
 * A noisy PNG that takes the AVIF encoder about a second per 1000x1000: a conversion that
 * stays in `processing` long enough to be seen there, on any machine this runs on.
 */
export function slowPng(size = 1000): Promise<Buffer> {
  return sharp({ create: { width: size, height: size, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

// ---------------------------------------------------------------- accounts

export interface AccountOptions {
  credits?: number;
  scopes?: string;
}

/**
 * A new account of `plan` with one key, through the running daemon's admin socket: the very
 * operations `convd accounts|keys` send there, without starting a CLI process for each (that
 * costs a few hundred ms of CPU apiece on a 2-core box). `newAccountWithCli` goes the CLI way.
 */
export async function newAccount(daemon: DaemonHandle, plan: PlanId, options: AccountOptions = {}): Promise<Client & { accountId: string }> {
  const created = (await callAdminSocket(daemon.dataDir, 'accounts.create', { plan, name: `test-${plan}` })) as { id: string };
  if (options.credits !== undefined) await callAdminSocket(daemon.dataDir, 'accounts.update', { id: created.id, credits: String(options.credits) });
  const key = (await callAdminSocket(daemon.dataDir, 'keys.create', { account: created.id, scopes: options.scopes ?? 'read,convert,delete' })) as { key: string };
  return { baseUrl: daemon.baseUrl, apiKey: key.key, accountId: created.id };
}

/** As `newAccount`, through `convd accounts create|update` and `convd keys create` with `--json`. */
export async function newAccountWithCli(daemon: DaemonHandle, plan: PlanId, options: AccountOptions = {}): Promise<Client & { accountId: string }> {
  const created = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', plan, '--name', `test-${plan}`, '--json']);
  assert.equal(created.code, 0, created.stderr);
  const accountId = (created.json as { id: string }).id;
  assert.match(accountId, /^acc_/);
  if (options.credits !== undefined) {
    const updated = await convdAdmin(daemon.dataDir, ['accounts', 'update', accountId, '--credits', String(options.credits), '--json']);
    assert.equal(updated.code, 0, updated.stderr);
  }
  const apiKey = await newKey(daemon, accountId, options.scopes ?? 'read,convert,delete');
  return { baseUrl: daemon.baseUrl, apiKey, accountId };
}

/** `convd keys create --json`: the key is printed once, with its id, account and scopes. */
export async function newKey(daemon: DaemonHandle, accountId: string, scopes: string): Promise<string> {
  const made = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', accountId, '--scopes', scopes, '--json']);
  assert.equal(made.code, 0, made.stderr);
  const key = made.json as { id: string; key: string; account: string; scopes: string[] };
  assert.match(key.id, /^key_/);
  assert.match(key.key, /^cvk_[A-Za-z0-9_-]{32,}$/);
  assert.equal(key.account, accountId);
  assert.deepEqual(key.scopes, scopes.split(','));
  return key.key;
}

// ---------------------------------------------------------------- requests

async function answer<T>(response: Response): Promise<Answer<T>> {
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, headers: response.headers, body: (type.includes('json') ? JSON.parse(text) : text) as T };
}

/** fetch with the client's key (`key: null` sends none); JSON bodies are parsed. */
export async function call<T = PublicConversion>(
  client: Client,
  path: string,
  init: RequestInit & { key?: string | null } = {},
): Promise<Answer<T>> {
  const headers = new Headers(init.headers);
  const key = init.key === undefined ? client.apiKey : init.key;
  if (key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
  let response: Response;
  try {
    response = await fetch(`${client.baseUrl}${path}`, { ...init, headers });
  } catch (error) {
    // fetch says only "fetch failed"; what failed (a reset, a refused connection) is its cause.
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}${'code' in error.cause ? ` (${String(error.cause.code)})` : ''}` : '';
    throw new TypeError(`${init.method ?? 'GET'} ${path}: ${error instanceof Error ? error.message : String(error)}${cause}`, { cause: error });
  }
  return answer<T>(response);
}

export interface Upload {
  data: Buffer;
  name: string;
}

/** multipart/form-data with text fields and an optional `file` part. */
export function form(fields: Record<string, string>, file?: Upload): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file) body.append('file', new Blob([file.data]), file.name);
  return body;
}

/** POST /conversions as multipart (the usual way to send a file). */
export function submitFile<T = PublicConversion>(
  client: Client,
  fields: Record<string, string>,
  file: Upload,
  headers: Record<string, string> = {},
  path = '/conversions',
): Promise<Answer<T>> {
  return call<T>(client, path, { method: 'POST', body: form(fields, file), headers });
}

export function submitJson<T = PublicConversion>(client: Client, body: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
  return call<T>(client, '/conversions', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

export function submitUrlencoded<T = PublicConversion>(client: Client, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer<T>> {
  return call<T>(client, '/conversions', {
    method: 'POST',
    body: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

/** GET with `wait=30` until the conversion is in an end state. */
export async function waitForEnd(client: Client, id: string): Promise<PublicConversion> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const got = await call(client, `/conversions/${id}?wait=30`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    if (END_STATUSES.has(got.body.status)) return got.body;
    if (Date.now() > deadline) assert.fail(`conversion ${id} did not end: ${JSON.stringify(got.body)}`);
  }
}

/** Polls (briefly) until the conversion is in `status`; fails when it passed it or time runs out. */
export async function pollUntilStatus(client: Client, id: string, status: string, timeoutMs = 15_000): Promise<PublicConversion> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await call(client, `/conversions/${id}`);
    assert.equal(got.status, 200);
    if (got.body.status === status) return got.body;
    if (END_STATUSES.has(got.body.status) || Date.now() > deadline) {
      assert.fail(`conversion ${id} never seen ${status}; now ${JSON.stringify(got.body)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

export async function download(client: Client, id: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${client.baseUrl}/conversions/${id}/download`, { headers: { authorization: `Bearer ${client.apiKey}`, ...headers } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

export function getAccount(client: Client): Promise<Answer<AccountView>> {
  return call<AccountView>(client, '/account');
}

// ---------------------------------------------------------------- checks

/**
 * The one error shape of spec 7, strictly: the body is `{error}` and nothing else, `error` has
 * `code`, a non-empty `message` and optionally an object `details`, and nothing else.
 */
export function assertError(got: Answer<unknown>, status: number, code: string): ErrorBody['error'] {
  assert.equal(got.status, status, `expected ${status} ${code}, got ${got.status} ${JSON.stringify(got.body)}`);
  assert.match(got.headers.get('content-type') ?? '', /^application\/json/);
  const body = got.body as ErrorBody;
  assert.deepEqual(Object.keys(body), ['error'], JSON.stringify(body));
  for (const key of Object.keys(body.error)) assert.ok(['code', 'message', 'details'].includes(key), `unexpected key error.${key}`);
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  if ('details' in body.error) assert.ok(typeof body.error.details === 'object' && body.error.details !== null && !Array.isArray(body.error.details));
  assert.ok(got.headers.get('content-language'), 'errors carry Content-Language');
  return body.error;
}

/** A validation error, returning its per-field problems (each with `reason` and a `message`). */
export function assertFieldErrors(got: Answer<unknown>, fields: string[]): Record<string, { reason: string; message: string }> {
  const error = assertError(got, 422, 'validation_failed');
  const problems = error.details?.fields as Record<string, { reason: string; message: string }> | undefined;
  assert.ok(problems, `details.fields missing: ${JSON.stringify(error)}`);
  assert.deepEqual(Object.keys(problems).sort(), [...fields].sort(), JSON.stringify(problems));
  for (const [name, problem] of Object.entries(problems)) {
    assert.equal(typeof problem.reason, 'string', name);
    assert.ok(problem.message.length > 0, name);
    assert.ok(error.message.includes(name), `the message names ${name}: ${error.message}`);
  }
  return problems;
}

/** Files left in the upload spool (must be none once a request is answered). */
export async function spoolFiles(dataDir: string): Promise<string[]> {
  return readdir(join(dataDir, 'blobs', 'spool'));
}

/** The daemon answers a plain request: proof that nothing above took it down. */
export async function assertAlive(client: Client): Promise<void> {
  const got = await call<AccountView>(client, '/account');
  assert.equal(got.status, 200);
}

// ---------------------------------------------------------------- raw HTTP

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: unknown;
}

/** A request written byte for byte (fetch would fix up malformed bodies and headers). */
export function rawRequest(
  client: Client,
  options: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const url = new URL(`${client.baseUrl}${options.path}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: options.method,
        path: `${url.pathname}${url.search}`,
        headers: { authorization: `Bearer ${client.apiKey}`, ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = null;
          try {
            json = JSON.parse(text);
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A raw answer viewed as an `Answer` for `assertError`. */
export function asAnswer(raw: RawAnswer): Answer<unknown> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw.headers)) if (typeof value === 'string') headers.set(name, value);
  return { status: raw.status, headers, body: raw.json };
}

// ---------------------------------------------------------------- input server

interface Route {
  body: Buffer;
  contentType: string;
  status: number;
  /** Extra headers, e.g. a Content-Length that announces more than is sent. */
  headers: Record<string, string>;
  /** Resolves when the test releases the response; until then the request hangs. */
  gate: Promise<void> | null;
  open: (() => void) | null;
}

/**
 * A local HTTP server for URL inputs, bound to 127.0.0.1. A route can be held: the daemon's
 * request then waits (the conversion stays `fetching`) until the test calls `release`.
 */
export class InputServer {
  private readonly routes = new Map<string, Route>();
  /** Paths requested so far, in order. */
  readonly requests: string[] = [];
  private readonly waiting = new Map<string, (() => void)[]>();
  private server!: Server;
  origin = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      this.requests.push(path);
      for (const notify of this.waiting.get(path) ?? []) notify();
      this.waiting.delete(path);
      const route = this.routes.get(path);
      if (!route) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
        return;
      }
      void (route.gate ?? Promise.resolve()).then(() => {
        if (res.destroyed) return;
        res.writeHead(route.status, { 'content-type': route.contentType, 'content-length': String(route.body.length), ...route.headers });
        res.end(route.body);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Serves `body` at `path`; `hold` keeps every response back until `release(path)`. */
  serve(path: string, body: Buffer, options: { contentType?: string; status?: number; hold?: boolean; headers?: Record<string, string> } = {}): string {
    let open: (() => void) | null = null;
    const gate = options.hold ? new Promise<void>((resolve) => (open = resolve)) : null;
    this.routes.set(path, {
      body, contentType: options.contentType ?? 'application/octet-stream', status: options.status ?? 200,
      headers: options.headers ?? {}, gate, open,
    });
    return `${this.origin}${path}`;
  }

  release(path: string): void {
    this.routes.get(path)?.open?.();
  }

  /** Resolves once `path` has been requested (at once if it already was). */
  requested(path: string): Promise<void> {
    if (this.requests.includes(path)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.waiting.get(path) ?? [];
      list.push(resolve);
      this.waiting.set(path, list);
    });
  }

  async stop(): Promise<void> {
    for (const route of this.routes.values()) route.open?.();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
