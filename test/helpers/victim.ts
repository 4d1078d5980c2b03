import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import type { PublicConversion } from '../../src/model/conversion.ts';
import type { DaemonHandle } from './daemon.ts';
import { workFiles } from './work-files.ts';

/**
 * The other tenant of the hostile suite: while an attack runs it keeps asking the daemon for
 * /healthz and /v1/account, and converts a PNG to WebP. What it measures is what an attack must
 * not take from it: answers, in time.
 */
export interface VictimReport {
  /** Requests answered while watching, and how many of them were not 200. */
  answered: number;
  failed: number;
  p99Ms: number;
  maxMs: number;
}

const PROBE_INTERVAL_MS = 5;
/**
 * Answers at least (an attack that ends at once is watched this long too): enough for a p99 to be
 * a percentile and not the single slowest answer, which on a 2-core machine running other test
 * files beside this one can be one scheduling hiccup.
 */
const MIN_ANSWERS = 150;

/**
 * The prober, run in a process of its own (plain JavaScript, a small heap): measured from the
 * test's own process, its garbage collection and file work after writing the attack's files
 * showed as pauses of 200 ms that the daemon never had. It probes until its stdin closes (and
 * MIN_ANSWERS at least), then prints its figures as JSON.
 */
const PROBER = `
const [healthz, account, key, interval, least] = process.argv.slice(1);
const times = []; let failed = 0; let stopped = false;
process.stdin.on('end', () => { stopped = true; }); process.stdin.resume();
(async () => {
  // Unmeasured: the first fetch of a process loads its HTTP client and opens a connection.
  for (const url of [healthz, account]) await (await fetch(url, { headers: { authorization: 'Bearer ' + key } })).arrayBuffer();
  process.stdout.write('ready\\n');
  for (let turn = 0; !stopped || times.length < Number(least); turn++) {
    const url = turn % 2 === 0 ? healthz : account;
    const began = performance.now();
    try {
      const response = await fetch(url, { headers: url === account ? { authorization: 'Bearer ' + key } : {}, signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (response.status !== 200) failed++;
    } catch { failed++; }
    times.push(performance.now() - began);
    await new Promise((resolve) => setTimeout(resolve, Number(interval)));
  }
  times.sort((a, b) => a - b);
  const p99 = times[Math.min(times.length - 1, Math.ceil(0.99 * times.length) - 1)];
  process.stdout.write(JSON.stringify({ answered: times.length, failed, p99Ms: p99, maxMs: times[times.length - 1] }));
})();
`;

/**
 * Probes /healthz and /v1/account (alternately, one at a time, from another process) until
 * `stop()`; `ready` once its HTTP client is warm and the measured probes begin.
 */
export function watchVictim(daemon: DaemonHandle, key: string): { ready: Promise<void>; stop(): Promise<VictimReport> } {
  const child = spawn(process.execPath, ['-e', PROBER, `${daemon.url}/healthz`, `${daemon.baseUrl}/account`, key, String(PROBE_INTERVAL_MS), String(MIN_ANSWERS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.startsWith('ready\n')) onReady();
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    ready,
    async stop() {
      child.stdin!.end();
      await exited;
      return JSON.parse(out.slice('ready\n'.length)) as VictimReport;
    },
  };
}

/** The victim's own conversion: a PNG to WebP, waited for and decoded. */
export async function victimConverts(daemon: DaemonHandle, key: string, png: Buffer): Promise<void> {
  const form = new FormData();
  form.set('target', 'webp');
  form.set('wait', '30');
  form.set('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'victim.png');
  const headers = { authorization: `Bearer ${key}` };
  const created = await fetch(`${daemon.baseUrl}/conversions`, { method: 'POST', body: form, headers });
  let view = (await created.json()) as PublicConversion;
  assert.ok(created.status === 200 || created.status === 202, `victim's submission: ${created.status} ${JSON.stringify(view)}`);
  const deadline = Date.now() + 120_000;
  while (view.status !== 'succeeded' && view.status !== 'failed' && Date.now() < deadline) {
    view = (await (await fetch(`${daemon.baseUrl}/conversions/${view.id}?wait=30`, { headers })).json()) as PublicConversion;
  }
  assert.equal(view.status, 'succeeded', `the victim's png -> webp: ${JSON.stringify(view.error)}`);
  const result = await fetch(`${daemon.baseUrl}/conversions/${view.id}/download`, { headers });
  const meta = await sharp(Buffer.from(await result.arrayBuffer())).metadata();
  assert.equal(meta.format, 'webp');
}

/**
 * Files of the daemon's spool and work dirs (uploads being received, conversions being written);
 * an emptied run directory kept for the next run holds none.
 */
export async function scratchFiles(daemon: DaemonHandle): Promise<string[]> {
  const { readdir } = await import('node:fs/promises');
  const spooled = await readdir(join(daemon.dataDir, 'blobs', 'spool')).catch(() => [] as string[]);
  return [...spooled.map((name) => `spool/${name}`), ...(await workFiles(daemon.dataDir)).map((name) => `work/${name}`)];
}

/** The daemon is the same process, still running. */
export async function assertAlive(daemon: DaemonHandle): Promise<void> {
  assert.equal(daemon.process.exitCode, null, 'the daemon never exits');
  assert.equal(daemon.process.signalCode, null, 'the daemon never exits');
  const status = (await readFile(`/proc/${daemon.process.pid}/stat`, 'utf8')).replace(/^.*\) /s, '')[0];
  assert.notEqual(status, 'Z');
}
