/**
 * Helpers of the operations suites (test/ops/*.test.ts): the real convd as an operator runs it
 * (any flags, environment, config file, https, another user), its JSON log lines, and the
 * Prometheus text of /metrics.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { CONVD_ARGV, firstKeyFile, readFirstKey, ROOT } from './daemon.ts';

export { ROOT };

export interface Convd {
  url: string;
  baseUrl: string;
  metricsUrl: string | null;
  apiKey: string;
  accountId: string;
  dataDir: string;
  process: ChildProcess;
  stderr(): string;
  /** The JSON log lines written so far. */
  logs(): LogLine[];
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
  stop(): Promise<number | null>;
  dispose(): Promise<void>;
}

export interface LogLine {
  time: string;
  level: string;
  event: string;
  [field: string]: unknown;
}

export interface ConvdOptions {
  args?: string[];
  env?: NodeJS.ProcessEnv;
  dataDir?: string;
  /** Run as this user (setpriv), e.g. `nobody`, where root's bypass of file modes would hide a failure. */
  user?: { uid: number; gid: number };
  /** Start under this umask (`sh -c 'umask 000; exec ...'`), e.g. `000` to see what the daemon sets itself. */
  umask?: string;
  apiKey?: string;
  accountId?: string;
}

export async function tempDir(prefix = 'convd-ops-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

function command(args: string[], user?: { uid: number; gid: number }, umask?: string): [string, string[]] {
  const node = [process.execPath, ...CONVD_ARGV, ...args];
  const argv = user ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', ...node] : node;
  // exec: the daemon stays the child, so signals and the exit code are its own.
  return umask === undefined ? [argv[0]!, argv.slice(1)] : ['sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', ...argv]];
}

/** Starts `convd serve --port 0 --data-dir <dir> ...args` and waits until it listens. */
export async function startConvd(options: ConvdOptions = {}): Promise<Convd> {
  const dataDir = options.dataDir ?? (await tempDir());
  const [file, args] = command(['serve', '--port', '0', '--data-dir', dataDir, ...(options.args ?? [])], options.user, options.umask);
  const child = spawn(file, args, { cwd: ROOT, env: { ...process.env, CONVD_LOG_FORMAT: 'json', ...options.env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  let listening: RegExpExecArray | null = null;
  while (!(listening = /convd listening on (https?:\/\/\S+) \(data [^)]*\)(?: metrics on (\S+)\/metrics)?/.exec(stderr))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`convd exited (${child.exitCode}) before listening:\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`convd did not start in time:\n${stderr}`);
    await sleep(20);
  }
  const keyFile = firstKeyFile(stderr);
  const apiKey = (keyFile ? await readFirstKey(keyFile) : undefined) ?? options.apiKey;
  const accountId = /created account (acc_[A-Za-z0-9]+)/.exec(stderr)?.[1] ?? options.accountId;
  if (!apiKey || !accountId) throw new Error('no API key: pass apiKey/accountId when restarting on an existing data dir');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  return {
    url: listening[1]!,
    baseUrl: `${listening[1]!}/v1`,
    metricsUrl: listening[2] ?? null,
    apiKey,
    accountId,
    dataDir,
    process: child,
    stderr: () => stderr,
    logs: () => parseLogLines(stderr),
    exited,
    signal: (name) => child.kill(name),
    stop,
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // A line cut at the end of what was read so far.
    }
  }
  return lines;
}

/** Runs a convd command to its end (`config print`, an invalid start, an admin command). */
export async function runConvd(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [file, list] = command(args);
  const child = spawn(file, list, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

export interface Answer {
  status: number;
  headers: Headers;
  // Tests read many shapes of answer: the suites narrow by assertion.
  body: any;
}

export async function call(daemon: Pick<Convd, 'url' | 'apiKey'>, path: string, init: RequestInit & { key?: string | null } = {}): Promise<Answer> {
  const headers = new Headers(init.headers);
  const key = init.key === undefined ? daemon.apiKey : init.key;
  if (key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
  const response = await fetch(`${daemon.url}${path}`, { ...init, headers });
  const text = await response.text();
  // A HEAD answer has JSON's content type and no body.
  const body: unknown = text !== '' && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
  return { status: response.status, headers: response.headers, body };
}

/**
 * One request written by hand on its own connection (any method Node parses, WebDAV's and SSDP's
 * included, which fetch refuses or rewrites); resolves with the status code of the answer.
 */
export function rawStatus(url: string, method: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
      if (status) {
        resolve(Number(status[1]));
        socket.destroy();
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`${method} ${path}: connection closed without an answer`)));
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${lines}Connection: close\r\n\r\n`);
  });
}

/** A GET over https trusting `ca`; also returns the server certificate's fingerprint. */
export function httpsGet(url: string, ca: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, headers, agent: false }, (res) => {
      let body = '';
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

export function pngUpload(image: Buffer, name = 'photo.png', fields: Record<string, string> = { target: 'webp' }): FormData {
  const form = new FormData();
  for (const [field, value] of Object.entries(fields)) form.set(field, value);
  form.set('file', new Blob([new Uint8Array(image)], { type: 'image/png' }), name);
  return form;
}

export function smallPng(): Promise<Buffer> {
  return sharp({ create: { width: 48, height: 32, channels: 3, background: '#3366aa' } }).png().toBuffer();
}

/**
 * A noisy PNG whose WebP encoding keeps one libvips thread busy for a while (about a second at
 * 2000 px on this class of machine): long enough to signal a daemon in the middle of it.
 */
export function slowPng(size = 2000): Promise<Buffer> {
  return sharp({ create: { width: size, height: size, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** Prometheus text exposition: `name{a="1",b="2"}` -> value (labels in the order written). */
export function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    samples.set(`${match[1]}${match[2] ?? ''}`, Number(match[3]));
  }
  return samples;
}

/** The value of a sample whose labels include `labels` (any order); 0 when absent. */
export function sample(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  for (const [key, value] of samples) {
    const match = /^([^{]+)(?:\{(.*)\})?$/.exec(key)!;
    if (match[1] !== name) continue;
    const have = new Map([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) return value;
  }
  return 0;
}
