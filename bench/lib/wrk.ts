/**
 * wrk (a load generator in C, Debian's `wrk`) against a server, for the reads: a Node client on
 * 2 cores takes CPU from the server it measures, so the server's own cost shows best under a C
 * client. Installed from Debian's packages when missing and this is root; else the caller is told.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LoadResult, LoadTarget } from './load-worker.ts';

const run = promisify(execFile);

/** The path of wrk, installing Debian's package first where it is missing and we may; undefined: none. */
export async function findWrk(): Promise<string | undefined> {
  const found = await run('sh', ['-c', 'command -v wrk']).then((r) => r.stdout.trim(), () => '');
  if (found) return found;
  if (process.getuid?.() !== 0) return undefined;
  await run('sh', ['-c', 'command -v apt-get >/dev/null && (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1))'], { timeout: 300_000 }).catch(() => undefined);
  return run('sh', ['-c', 'command -v wrk']).then((r) => r.stdout.trim() || undefined, () => undefined);
}

export interface WrkPlan {
  host: string;
  port: number;
  /** Taken in turn, one per request. */
  targets: LoadTarget[];
  threads: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

/**
 * The requests, made once, taken in turn. Host is written out: wrk.format adds it from wrk.host,
 * which is not yet set where a script's top level runs (without it every answer was a 400).
 */
const lua = (targets: readonly LoadTarget[], host: string): string => `
local targets = {}
${targets.map((target) => `table.insert(targets, wrk.format("GET", ${JSON.stringify(target.path)}, { ["Host"] = ${JSON.stringify(host)}, ${Object.entries(target.headers).map(([name, value]) => `[${JSON.stringify(name)}] = ${JSON.stringify(value)}`).join(', ')} }))`).join('\n')}
local cursor = 0
request = function()
  cursor = cursor % #targets + 1
  return targets[cursor]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"elapsedMs":%f,"bytes":%d,"socketErrors":%d,"statusErrors":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration / 1000, summary.bytes, e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(99)))
end
`;

/** A warm-up run, then the measured one; statuses other than 2xx and 3xx are counted as `other`. */
export async function runWrk(wrk: string, plan: WrkPlan, dir: string): Promise<LoadResult & { p99Us: number }> {
  const script = join(dir, 'targets.lua');
  await writeFile(script, lua(plan.targets, `${plan.host}:${plan.port}`));
  const url = `http://${plan.host}:${plan.port}`;
  const once = async (ms: number) => {
    const { stdout } = await run(wrk, ['-t', String(plan.threads), '-c', String(plan.connections), '-d', `${Math.max(1, Math.round(ms / 1000))}s`, '-s', script, url], { maxBuffer: 1 << 20 });
    const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk printed no summary: ${stdout}`);
    return JSON.parse(line) as { requests: number; elapsedMs: number; bytes: number; socketErrors: number; statusErrors: number; p99Us: number };
  };
  await once(plan.warmupMs);
  const got = await once(plan.durationMs);
  return {
    requests: got.requests, elapsedMs: got.elapsedMs, bodyBytes: got.bytes, errors: got.socketErrors,
    statuses: { '200': got.requests - got.statusErrors, ...(got.statusErrors > 0 ? { other: got.statusErrors } : {}) },
    p99Us: got.p99Us,
  };
}
