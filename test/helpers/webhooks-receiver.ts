/**
 * Test support for the webhook suites (not a suite itself): a real receiver on 127.0.0.1, over
 * HTTPS with a self-signed certificate made by openssl, or over plain http.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Certificate {
  key: string;
  cert: string;
}

let cached: Certificate | undefined;

/** A self-signed certificate for 127.0.0.1 and localhost (one per test process: openssl is slow-ish). */
export function selfSignedCertificate(): Certificate {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'convd-cert-'));
  try {
    const keyPath = join(dir, 'key.pem');
    const certPath = join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=convd webhook test receiver',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    cached = { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived on the wire. */
  body: Buffer;
  /** performance.now() when the request arrived (head received). */
  atMs: number;
}

/** What to answer to the `index`-th request (0-based); 'hang' never answers. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';
export type Responder = (request: ReceivedRequest, index: number) => Answer;

export interface Receiver {
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** TCP connections accepted (a blocked address must not even reach connect). */
  readonly connections: () => number;
  url(path?: string, host?: string): string;
  close(): Promise<void>;
}

export async function startReceiver(options: { tls: boolean; respond: Responder }): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const atMs = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        atMs,
      };
      requests.push(request);
      const answer = options.respond(request, requests.length - 1);
      if (answer === 'hang') return;
      setTimeout(() => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body ?? '');
      }, answer.delayMs ?? 0);
    });
  };
  const server = options.tls
    ? https.createServer({ ...selfSignedCertificate() }, handler)
    : http.createServer(handler);
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const scheme = options.tls ? 'https' : 'http';
  return {
    port,
    requests,
    connections: () => connections,
    url: (path = '/hook', host = '127.0.0.1') => `${scheme}://${host}:${port}${path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls until `check` is true, failing after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
