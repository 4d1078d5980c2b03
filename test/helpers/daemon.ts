import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestBucket } from './s3.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * How the suites run convd after `node`: the compiled daemon, as `npm start` and its users run
 * it, when dist/ is the build of these sources (`npm test` builds first); else the sources under
 * tsx (a suite run by hand after an edit). The compiled daemon, and each engine host it starts,
 * loads in well under half the CPU.
 */
export const CONVD_ARGV: readonly string[] = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--check']).status === 0
  ? [join(ROOT, 'dist', 'daemon', 'main.js')]
  : ['--import', 'tsx', join(ROOT, 'daemon', 'main.ts')];

export interface DaemonHandle {
  /** http://127.0.0.1:PORT */
  url: string;
  /** url + /v1 */
  baseUrl: string;
  /** The bootstrap key of the first start (an unmetered account with every scope). */
  apiKey: string;
  accountId: string;
  dataDir: string;
  /**
   * The PostgreSQL database the daemon keeps its state in (the shared stores of
   * CONVD_TEST_STORE=postgres, or a `--database-url` of its own); undefined on lowdb.
   */
  databaseUrl?: string;
  /**
   * What an admin command needs besides `--data-dir` to reach the daemon's store while no daemon
   * runs on it: `['--database-url', URL]` on PostgreSQL, nothing on lowdb (the store is in the
   * data dir). While the daemon runs, `--data-dir` alone goes through its admin socket.
   */
  storeArgs: string[];
  /** The database and bucket made for it under CONVD_TEST_STORE=postgres (`stores` of a later start on them). */
  stores?: SharedStores;
  process: ChildProcess;
  /** Everything the daemon wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL (crash) and wait for exit. */
  kill(): Promise<void>;
  /** Starts a new daemon process on the same data dir (after stop or kill). */
  restart(extraArgs?: string[]): Promise<DaemonHandle>;
  /** Stops the daemon if running and deletes the data dir. */
  dispose(): Promise<void>;
}

export interface StartOptions {
  args?: string[];
  env?: NodeJS.ProcessEnv;
  dataDir?: string;
  /** Known key and account when restarting on an existing data dir. */
  apiKey?: string;
  accountId?: string;
  /** The database and bucket of a restart (CONVD_TEST_STORE=postgres). */
  stores?: SharedStores;
}

/**
 * What the engines' probes found, shared by the daemons of a run that start on a fresh data dir
 * with the same arguments and environment: probing LibreOffice, pandoc and ffmpeg costs a fresh
 * daemon about 2 s of CPU (0.6 s to start with the findings), and the suites start hundreds. The
 * findings carry the daemon's own fingerprint (code, Node, dependencies, binaries, settings): a
 * daemon for which they do not hold probes as always, and its findings replace them. Only
 * findings in which every engine is available are shared (a probe that failed under load must
 * not hide formats from the daemons after it). Kept under node_modules/.cache, not the
 * temporary directory some suites watch.
 */
const FINDINGS_SEEDS = join(ROOT, 'node_modules', '.cache', 'convd-test-findings');

function seedPathOf(options: StartOptions): string {
  const key = createHash('sha256').update(JSON.stringify([process.version, CONVD_ARGV, options.args ?? [], options.env ?? {}])).digest('hex').slice(0, 24);
  return join(FINDINGS_SEEDS, `${key}.json`);
}

async function seedFindings(dataDir: string, seed: string): Promise<void> {
  try {
    await mkdir(join(dataDir, 'cache'), { recursive: true, mode: 0o700 });
    await copyFile(seed, join(dataDir, 'cache', 'engines.json'));
  } catch {
    // No findings yet: this daemon probes, and shares what it finds.
  }
}

async function shareFindings(dataDir: string, seed: string): Promise<void> {
  try {
    const found = await readFile(join(dataDir, 'cache', 'engines.json'), 'utf8');
    const { fingerprint, engines } = JSON.parse(found) as { fingerprint?: string; engines?: { status?: { available?: boolean } }[] };
    if (!Array.isArray(engines) || !engines.every((engine) => engine.status?.available === true)) return;
    const shared = await readFile(seed, 'utf8').then((text) => (JSON.parse(text) as { fingerprint?: string }).fingerprint, () => undefined);
    if (shared === fingerprint) return;
    await mkdir(FINDINGS_SEEDS, { recursive: true });
    const temp = `${seed}.${process.pid}.tmp`;
    await writeFile(temp, found);
    await rename(temp, seed);
  } catch {
    // Sharing is an optimisation: a daemon without findings to share probes next time too.
  }
}

/** Runs the admin CLI (`convd accounts ...`) against a data dir (null: none named) and returns its JSON output. */
export async function convdAdmin(dataDir: string | null, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string; json: unknown }> {
  const child = spawn(process.execPath, [...CONVD_ARGV, ...args, ...(dataDir === null ? [] : ['--data-dir', dataDir])], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  let json: unknown = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = null;
  }
  return { code, stdout, stderr, json };
}

/**
 * The file convd wrote its first key to (stderr is no terminal here, so the key itself is never
 * on it): named by the `convd: api key file PATH` line of a first start.
 */
export function firstKeyFile(stderr: string): string | undefined {
  return /^convd: api key file (.+)$/m.exec(stderr)?.[1];
}

export async function readFirstKey(path: string): Promise<string> {
  const key = (await readFile(path, 'utf8')).trim();
  if (!/^cvk_[A-Za-z0-9_-]+$/.test(key)) throw new Error(`${path} holds no API key`);
  return key;
}

/**
 * `CONVD_TEST_STORE=postgres`: every daemon a suite starts without a store of its own runs on a
 * fresh PostgreSQL database and keeps its files in an S3 bucket (s3rver, a prefix per daemon),
 * so that the same suites, with the same assertions, check both stores (`npm run test:postgres`).
 * Its handle names them (`databaseUrl`, `storeArgs`, `stores`) for what a suite does beside the
 * daemon: an admin command while it is down, a look into the database or the bucket after a crash,
 * a later start on the same stores.
 */
const SHARED_STORES = process.env.CONVD_TEST_STORE === 'postgres';

/** The store the daemons of this run use: what a suite checks differently on each (where the state and the files are). */
export const TEST_STORE: 'lowdb' | 'postgres' = SHARED_STORES ? 'postgres' : 'lowdb';

export interface SharedStores {
  args: string[];
  env: NodeJS.ProcessEnv;
  drop(): Promise<void>;
  /** The fresh database's URL. */
  databaseUrl: string;
  /** The shared bucket and the daemon's prefix in it (its files are `<prefix>/inputs/<id>` and `<prefix>/results/<id>`). */
  bucket: TestBucket;
  prefix: string;
}

async function sharedStores(): Promise<SharedStores> {
  const [{ freshDatabase }, { sharedBucket, S3_ENV }] = await Promise.all([import('./postgres.ts'), import('./s3.ts')]);
  const [database, bucket] = await Promise.all([freshDatabase(), sharedBucket()]);
  await bucket.keepDirs(database.name);
  return {
    args: ['--database-url', database.url, '--blob-url', bucket.blobUrl(database.name)], env: { ...S3_ENV }, drop: () => database.drop(),
    databaseUrl: database.url, bucket, prefix: database.name,
  };
}

/**
 * The data dirs made here that no dispose() removed yet (a test that only stops its daemon, or
 * one that failed before its cleanup): removed when the test process exits, so that runs of the
 * suite leave nothing in the system's temp dir.
 */
const madeDataDirs = new Set<string>();
let removingAtExit = false;

function removedAtExit(dataDir: string): string {
  // One listener for the process, however often the set empties and fills again.
  if (!removingAtExit) {
    removingAtExit = true;
    process.once('exit', () => {
      for (const dir of madeDataDirs) rmSync(dir, { recursive: true, force: true });
    });
  }
  madeDataDirs.add(dataDir);
  return dataDir;
}

/** Spawns the real convd on an ephemeral port with its own data dir and waits until it listens. */
export async function startDaemon(options: StartOptions = {}): Promise<DaemonHandle> {
  const dataDir = options.dataDir ?? removedAtExit(await mkdtemp(join(tmpdir(), 'convd-test-')));
  // A restart keeps its data dir's own findings; a fresh data dir may start from the run's.
  const seed = options.dataDir === undefined ? seedPathOf(options) : undefined;
  if (seed) await seedFindings(dataDir, seed);
  const ownStore = (options.args ?? []).some((arg) => arg === '--database-url' || arg === '--blob-url');
  const stores = options.stores ?? (SHARED_STORES && !ownStore ? await sharedStores() : undefined);
  const args = [...CONVD_ARGV, 'serve', '--port', '0', '--data-dir', dataDir, ...(stores?.args ?? []), ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...stores?.env, ...options.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const madeHere = stores !== undefined && options.stores === undefined;
  const ready = await new Promise<{ url: string; keyFile?: string; accountId?: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`convd did not start in time:\n${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const listening = /convd listening on (http:\/\/\S+)/.exec(stderr);
      if (listening) {
        clearTimeout(timer);
        resolve({ url: listening[1]!, keyFile: firstKeyFile(stderr), accountId: /created account (acc_[A-Za-z0-9]+)/.exec(stderr)?.[1] });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`convd exited with ${code} before listening:\n${stderr}`));
    });
  }).catch(async (error: unknown) => {
    // A start that failed leaves no database behind.
    if (madeHere) await stores.drop().catch(() => undefined);
    throw error;
  });
  if (seed) await shareFindings(dataDir, seed);
  const apiKey = (ready.keyFile ? await readFirstKey(ready.keyFile) : undefined) ?? options.apiKey;
  const accountId = ready.accountId ?? options.accountId;
  if (!apiKey || !accountId) throw new Error('no API key: pass apiKey/accountId when restarting on an existing data dir');
  // The daemon's own `--database-url` (later flags win), else that of its shared stores.
  const named = options.args?.lastIndexOf('--database-url') ?? -1;
  const databaseUrl = named >= 0 ? options.args![named + 1] : stores?.databaseUrl;
  const waitExit = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const handle: DaemonHandle = {
    url: ready.url,
    baseUrl: `${ready.url}/v1`,
    apiKey,
    accountId,
    dataDir,
    ...(databaseUrl ? { databaseUrl } : {}),
    storeArgs: databaseUrl ? ['--database-url', databaseUrl] : [],
    ...(stores ? { stores } : {}),
    process: child,
    stderr: () => stderr,
    stop: () => waitExit('SIGTERM'),
    kill: () => waitExit('SIGKILL'),
    restart: (extraArgs) => startDaemon({ ...options, args: extraArgs ?? options.args, dataDir, apiKey, accountId, ...(stores ? { stores } : {}) }),
    async dispose() {
      await waitExit('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      madeDataDirs.delete(dataDir);
      await stores?.drop();
    },
  };
  return handle;
}

/** fetch against the daemon with the key set; returns status, headers and parsed JSON (or text). */
export async function api(
  daemon: Pick<DaemonHandle, 'baseUrl' | 'apiKey'>,
  path: string,
  init: RequestInit & { key?: string | null } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers = new Headers(init.headers);
  const key = init.key === undefined ? daemon.apiKey : init.key;
  if (key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
  const response = await fetch(`${daemon.baseUrl}${path}`, { ...init, headers });
  const text = await response.text();
  let body: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body };
}
