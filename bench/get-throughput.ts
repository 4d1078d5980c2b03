/**
 * get-throughput: GET /v1/conversions/{id} throughput through the real daemon against a bare
 * node:http server that answers the same JSON bytes. Each server runs in its own process, the load
 * generator in a third; both are driven the same way (keep-alive connections, closed loop, same
 * duration), first by a Node client (bench/lib/load-worker.ts), then by wrk, a client in C (one
 * thread, 32 connections), which takes less CPU from the servers on 2 cores: the judged figure.
 */
import { join } from 'node:path';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody, send } from './lib/http.ts';
import { photoPng } from './lib/images.ts';
import { runLoadProcess, type LoadResult, type LoadTarget } from './lib/load.ts';
import { removeDir, spawnTracked, stopChild, tempDir } from './lib/processes.ts';
import { seedAccounts, type SeededAccount } from './lib/seed.ts';
import { cpuTimeMs } from './lib/cpu.ts';
import { ROOT } from './lib/daemon.ts';
import type { BenchResult } from './types.ts';
import { findWrk, runWrk } from './lib/wrk.ts';

const CONNECTIONS = 16;
/** wrk's connections and threads (the issue's: one thread, 32 connections). */
const WRK_CONNECTIONS = 32;
const WRK_THREADS = 1;
/**
 * Accounts the reads are spread over: the unmetered plan's 60000 requests per minute is a token
 * bucket per account, and one account alone would be refused (429) within seconds at these
 * rates, measuring cheap refusals instead of reads. 32 allow 32,000 reads a second.
 */
const ACCOUNTS = 32;
const WARMUP_MS = 1000;
const DURATION_MS = 3000;
/**
 * Rounds alternate between the two servers and the best round of each counts: on a machine
 * shared with other work, the best round is the one least disturbed by it.
 */
const ROUNDS = 2;

/** Headers the bare server copies from the daemon's answer; the rest are per-connection framing. */
const COPIED_HEADERS = ['content-type', 'content-language', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'cache-control'];

export async function benchGetThroughput(): Promise<BenchResult> {
  const dataDir = await tempDir('get');
  const notes: string[] = [];
  try {
    const accounts = await seedAccounts(dataDir, ACCOUNTS, 'unmetered');
    const daemon = await startBenchDaemon({ dataDir, apiKey: accounts[0]!.apiKey });
    let bare: ReturnType<typeof spawnTracked> | undefined;
    try {
      const { targets, sample } = await targetsOf(daemon, accounts);
      const headers: Record<string, string> = {};
      for (const name of COPIED_HEADERS) {
        const value = sample.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }

      bare = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 'bare-server.ts'), JSON.stringify({ body: sample.body.toString('utf8'), headers })], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const barePort = await new Promise<number>((resolve, reject) => {
        bare!.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
        bare!.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
      });

      const plan = { connections: CONNECTIONS, warmupMs: WARMUP_MS, durationMs: DURATION_MS };
      const convd: Measured[] = [];
      const baseline: Measured[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        convd.push(await measured(daemon.pid, () => runLoadProcess({ ...plan, host: daemon.host, port: daemon.port, targets })));
        baseline.push(await measured(bare!.pid!, () => runLoadProcess({ ...plan, host: '127.0.0.1', port: barePort, targets })));
      }
      for (const m of convd) checkAllOk('convd', m.result, notes);
      for (const m of baseline) checkAllOk('node:http', m.result, notes);

      const convdRate = Math.max(...convd.map((m) => rate(m.result)));
      const bareRate = Math.max(...baseline.map((m) => rate(m.result)));
      const nodeRatio = convdRate / bareRate;
      const convdCpu = Math.min(...convd.map(cpuPerRequestUs));
      const bareCpu = Math.min(...baseline.map(cpuPerRequestUs));
      const nodeClient = `Node client, ${CONNECTIONS} keep-alive connections, best of ${ROUNDS} alternating rounds of ${DURATION_MS / 1000} s (after ${WARMUP_MS / 1000} s warm-up), ${sample.body.length}-byte body: convd ${convdRate.toFixed(0)} req/s vs node:http ${bareRate.toFixed(0)} req/s = ${nodeRatio.toFixed(2)}x`;
      const cpu = `server CPU per request (Node client): convd ${convdCpu.toFixed(1)} us vs node:http ${bareCpu.toFixed(1)} us = ${(bareCpu / convdCpu).toFixed(2)}x (insensitive to other load on the machine)`;

      const wrk = await findWrk();
      if (!wrk) {
        return {
          title: 'GET throughput', figures: nodeClient, ratio: `${nodeRatio.toFixed(2)}x (Node client)`, target: '>= 0.6x with wrk',
          pass: false, notes: ['wrk is not installed and could not be (apt-get install wrk as root): the judged figure is missing', cpu, ...notes],
        };
      }
      const wrkPlan = { threads: WRK_THREADS, connections: WRK_CONNECTIONS, warmupMs: WARMUP_MS, durationMs: DURATION_MS, targets };
      const convdWrk: Measured[] = [];
      const bareWrk: Measured[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        convdWrk.push(await measured(daemon.pid, () => runWrk(wrk, { ...wrkPlan, host: daemon.host, port: daemon.port }, dataDir)));
        bareWrk.push(await measured(bare!.pid!, () => runWrk(wrk, { ...wrkPlan, host: '127.0.0.1', port: barePort }, dataDir)));
      }
      for (const m of convdWrk) checkAllOk('convd (wrk)', m.result, notes);
      for (const m of bareWrk) checkAllOk('node:http (wrk)', m.result, notes);
      const convdWrkRate = Math.max(...convdWrk.map((m) => rate(m.result)));
      const bareWrkRate = Math.max(...bareWrk.map((m) => rate(m.result)));
      const ratio = convdWrkRate / bareWrkRate;
      return {
        title: 'GET throughput',
        figures: `wrk (C, ${WRK_THREADS} thread, ${WRK_CONNECTIONS} connections): convd ${convdWrkRate.toFixed(0)} req/s vs node:http ${bareWrkRate.toFixed(0)} req/s`,
        ratio: `${ratio.toFixed(2)}x`,
        target: '>= 0.6x',
        pass: ratio >= 0.6 && notes.length === 0,
        notes: [
          `wrk: best of ${ROUNDS} alternating rounds of ${DURATION_MS / 1000} s (after ${WARMUP_MS / 1000} s warm-up); server CPU per request convd ${Math.min(...convdWrk.map(cpuPerRequestUs)).toFixed(1)} us vs node:http ${Math.min(...bareWrk.map(cpuPerRequestUs)).toFixed(1)} us`,
          nodeClient,
          cpu,
          ...notes,
        ],
      };
    } finally {
      if (bare) await stopChild(bare);
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
  }
}

interface Measured {
  result: LoadResult;
  /** Server CPU time over the whole run, warm-up included. */
  cpuMs: number;
  /** Requests answered over the whole run (estimated from the measured window's rate). */
  totalRequests: number;
}

async function measured(pid: number, run: () => Promise<LoadResult>): Promise<Measured> {
  const before = await cpuTimeMs(pid);
  const result = await run();
  const cpuMs = (await cpuTimeMs(pid)) - before;
  return { result, cpuMs, totalRequests: (result.requests * (WARMUP_MS + DURATION_MS)) / DURATION_MS };
}

function cpuPerRequestUs(m: Measured): number {
  return (m.cpuMs * 1000) / m.totalRequests;
}

export function rate(result: LoadResult): number {
  return (result.requests * 1000) / result.elapsedMs;
}

export function checkAllOk(name: string, result: LoadResult, notes: string[]): void {
  const other = Object.entries(result.statuses).filter(([status]) => status !== '200');
  if (other.length > 0 || result.errors > 0) {
    notes.push(`INVALID: ${name} answered ${other.map(([s, n]) => `${n}x ${s}`).join(', ') || 'no errors'}; ${result.errors} socket errors`);
  }
  if (result.requests === 0) notes.push(`INVALID: ${name} answered nothing`);
}

/** One finished conversion per account: the GET answers a full object with its result. `sample`: one answer. */
export async function targetsOf(daemon: BenchDaemon, accounts: readonly SeededAccount[]): Promise<{ targets: LoadTarget[]; sample: Awaited<ReturnType<typeof send>> }> {
  const image = await photoPng(64, 48, 1);
  const targets: LoadTarget[] = [];
  for (const account of accounts) {
    const { contentType, body } = multipartBody({ target: 'webp', wait: '30' }, 'photo.png', 'image/png', image);
    const created = await send(daemon, 'POST', '/v1/conversions', { authorization: `Bearer ${account.apiKey}`, 'content-type': contentType }, body);
    if (created.status !== 200) throw new Error(`submission answered ${created.status}: ${created.body}`);
    const id = json<{ id: string }>(created).id;
    targets.push({ path: `/v1/conversions/${id}`, headers: { authorization: `Bearer ${account.apiKey}` } });
  }
  const sample = await send(daemon, 'GET', targets[0]!.path, targets[0]!.headers);
  if (sample.status !== 200) throw new Error(`GET answered ${sample.status}`);
  return { targets, sample };
}
