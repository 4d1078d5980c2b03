/**
 * The real convd, compiled (`npm run bench` builds first), in its own process on an ephemeral
 * port: what a deployment runs, without tsx in the way of its memory or CPU figures.
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnTracked, stopChild } from './processes.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** BENCH_DAEMON_MAIN runs another build's daemon (an A/B comparison against a worktree of an older commit). */
const MAIN = process.env.BENCH_DAEMON_MAIN ?? join(ROOT, 'dist', 'daemon', 'main.js');

export interface BenchDaemon {
  url: string;
  host: string;
  port: number;
  /** The bootstrap key of a fresh data dir, or the key given for a seeded one. */
  apiKey: string;
  pid: number;
  startMs: number;
  /** VmRSS and VmHWM (peak) of the daemon process, in KiB. */
  memory(): Promise<{ rssKb: number; peakKb: number }>;
  /** Resets VmHWM to the current RSS (Linux clear_refs 5); false where that is not possible. */
  resetPeak(): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * BENCH_DAEMON_NODE_ARGS adds node flags to every daemon a bench starts, e.g.
 * `BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- get-throughput`
 * to profile it.
 */
const EXTRA_NODE_ARGS = (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
/**
 * BENCH_DAEMON_STDOUT appends every daemon's stdout (which convd leaves empty) to a file, for what
 * node flags print there: `BENCH_DAEMON_NODE_ARGS=--trace-gc BENCH_DAEMON_STDOUT=/tmp/gc.log`.
 */
const STDOUT_FILE = process.env.BENCH_DAEMON_STDOUT;
/** BENCH_DAEMON_ARGS adds convd options after a bench's own, e.g. `--log-level warn` to see what logging costs. */
const EXTRA_ARGS = (process.env.BENCH_DAEMON_ARGS ?? '').split(/\s+/).filter(Boolean);

/**
 * `env` changes the daemon's environment (this process's, inherited): a string sets a variable,
 * `undefined` removes it, e.g. `{ LD_PRELOAD: undefined, MALLOC_ARENA_MAX: undefined }` for a
 * daemon on glibc's own malloc whatever the shell that ran the bench sets.
 */
export interface BenchDaemonOptions {
  dataDir: string;
  args?: string[];
  apiKey?: string;
  env?: Record<string, string | undefined>;
}

function daemonEnv(changes: Record<string, string | undefined> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(changes ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

export async function startBenchDaemon(options: BenchDaemonOptions): Promise<BenchDaemon> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` (npm run bench does)`);
  const started = performance.now();
  const stdout = STDOUT_FILE ? openSync(STDOUT_FILE, 'a') : undefined;
  const child = spawnTracked(process.execPath, [...EXTRA_NODE_ARGS, MAIN, 'serve', '--port', '0', '--data-dir', options.dataDir, ...(options.args ?? []), ...EXTRA_ARGS], {
    cwd: ROOT,
    env: daemonEnv(options.env),
    stdio: ['ignore', stdout ?? 'ignore', 'pipe'],
  });
  if (stdout !== undefined) closeSync(stdout);
  // Only the head of stderr matters (address, the first key's file); the per-conversion log lines are dropped.
  let head = '';
  const ready = await new Promise<{ url: string; keyFile?: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`convd did not start within 60 s:\n${head}`)), 60_000);
    const onData = (chunk: Buffer) => {
      if (head.length < 64 * 1024) head += chunk.toString();
      const listening = /convd listening on (http:\/\/\S+)/.exec(head);
      if (listening) {
        clearTimeout(timer);
        // stderr is a pipe: convd writes its first key to a file and names it there, never the key.
        resolve({ url: listening[1]!, keyFile: /^convd: api key file (.+)$/m.exec(head)?.[1] });
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`convd exited with ${code} before listening:\n${head}`));
    });
  });
  child.stderr!.resume();
  const apiKey = (ready.keyFile ? (await readFile(ready.keyFile, 'utf8')).trim() : undefined) ?? options.apiKey;
  if (!apiKey) throw new Error('no API key: the data dir was seeded, pass its key');
  const address = new URL(ready.url);
  const pid = child.pid!;
  const status = () => readFile(`/proc/${pid}/status`, 'utf8');
  const field = (text: string, name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return {
    url: ready.url,
    host: address.hostname,
    port: Number(address.port),
    apiKey,
    pid,
    startMs: performance.now() - started,
    async memory() {
      const text = await status();
      return { rssKb: field(text, 'VmRSS'), peakKb: field(text, 'VmHWM') };
    },
    async resetPeak() {
      try {
        await writeFile(`/proc/${pid}/clear_refs`, '5');
        return true;
      } catch {
        return false;
      }
    },
    stop: () => stopChild(child, 15_000),
  };
}
