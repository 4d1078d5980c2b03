/**
 * Talking to a real convd for engines/registry-pairs.test.ts and hostile/daemon.test.ts: streamed
 * multipart uploads (a file of any size goes from disk to the socket, never into memory),
 * waiting for an end state, downloads, metered accounts, and what /proc says about the daemon's
 * child processes and its scratch directories.
 */
import assert from 'node:assert/strict';
import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { PublicConversion } from '../../src/model/conversion.ts';
import type { PlanId } from '../../src/model/plan.ts';
import { convdAdmin, type DaemonHandle } from './daemon.ts';

export interface Client {
  baseUrl: string;
  apiKey: string;
}

export const END_STATES = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** A new account of `plan` with one key of every scope, made through the admin CLI. */
export async function meteredClient(daemon: DaemonHandle, plan: PlanId): Promise<Client> {
  const account = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', plan, '--name', `pairs-${plan}`, '--json']);
  assert.equal(account.code, 0, account.stderr);
  const id = (account.json as { id: string }).id;
  const key = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', id, '--json']);
  assert.equal(key.code, 0, key.stderr);
  return { baseUrl: daemon.baseUrl, apiKey: (key.json as { key: string }).key };
}

export async function getJson<T>(client: Client, path: string, method = 'GET'): Promise<{ status: number; body: T }> {
  const response = await fetch(`${client.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${client.apiKey}` } });
  return { status: response.status, body: (await response.json()) as T };
}

/** POST /conversions as multipart, the file streamed from disk with a known Content-Length. */
export function uploadFile(client: Client, fields: Record<string, string>, filePath: string, fileName = basename(filePath)): Promise<{ status: number; body: PublicConversion }> {
  const boundary = `----convd-pairs-${randomBytes(8).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const url = new URL(`${client.baseUrl}/conversions`);
  return stat(filePath).then((info) => new Promise((resolve, reject) => {
    const req = request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: {
        authorization: `Bearer ${client.apiKey}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(Buffer.byteLength(head) + info.size + Buffer.byteLength(tail)),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(head);
    const file = createReadStream(filePath);
    file.on('error', reject);
    file.on('end', () => req.end(tail));
    file.pipe(req, { end: false });
  }));
}

/** Polls with the daemon's `?wait=` until the conversion reaches an end state. */
export async function waitForEnd(client: Client, id: string, timeoutMs = 60_000): Promise<PublicConversion> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = Math.max(1, Math.min(30, Math.ceil((deadline - Date.now()) / 1000)));
    const answer = await getJson<PublicConversion>(client, `/conversions/${id}?wait=${left}`);
    assert.equal(answer.status, 200);
    if (END_STATES.has(answer.body.status)) return answer.body;
    if (Date.now() > deadline) assert.fail(`${id} still ${answer.body.status} after ${timeoutMs} ms`);
  }
}

export async function download(client: Client, id: string, path: string): Promise<void> {
  const response = await fetch(`${client.baseUrl}/conversions/${id}/download`, { headers: { authorization: `Bearer ${client.apiKey}` } });
  assert.equal(response.status, 200, `download of ${id}`);
  await writeFile(path, Buffer.from(await response.arrayBuffer()));
}

export async function remainingCredits(client: Client): Promise<number | null> {
  const answer = await getJson<{ credits: { remaining: number | null } }>(client, '/account');
  assert.equal(answer.status, 200);
  return answer.body.credits.remaining;
}

// ------------------------------------------------------------------------- processes

export interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
  state: string;
  command: string;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), pgrp: Number(fields[2]), command: stat.slice(stat.indexOf('(') + 1, close) };
  } catch {
    return undefined;
  }
}

/** Every process below `root` (children, grandchildren, ...), zombies included. */
export function descendantsOf(root: number): Proc[] {
  const all: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = readProc(Number(entry));
    if (info) all.push(info);
  }
  const found: Proc[] = [];
  const parents = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const proc of all) {
      if (parents.has(proc.ppid) && !parents.has(proc.pid)) {
        parents.add(proc.pid);
        found.push(proc);
        grew = true;
      }
    }
  }
  return found;
}

/** ffmpeg and ffprobe processes the daemon started that still exist in any state. */
export function mediaProcessesOf(daemonPid: number): Proc[] {
  return descendantsOf(daemonPid).filter((p) => p.command === 'ffmpeg' || p.command === 'ffprobe');
}

export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Names of the entries in the daemon's blob sub-directory (`work`, `spool`, `inputs`, ...). */
export async function blobEntries(daemon: DaemonHandle, sub: string): Promise<string[]> {
  return readdir(join(daemon.dataDir, 'blobs', sub));
}
