import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineBinaries, engineDataDirs } from './configuration.ts';
import type { KnownEngine, LazyEngine } from './lazy.ts';

/**
 * A cache of what the engines' probes found (their status, formats and pairs), so the in-process
 * CLI builds its format registry without loading sharp, pdf-lib or the data libraries and
 * without running ffmpeg: `conv formats` and the option check of `conv convert` cost a few file
 * reads, and a conversion loads only the engine it needs (engines/lazy.ts). The daemon keeps one
 * too, in its data dir: probing LibreOffice and pandoc (whose sandboxed writers are tried on a
 * sample) took most of a second at every start. The CLI's file lives in
 * `$XDG_CACHE_HOME/conv/formats.json` (the daemon's: DATA_DIR/cache/engines.json) and is
 * valid for one fingerprint of everything the engines' probes depend on: the package version,
 * the engine and format code, node, the installed dependencies and the ffmpeg binaries. Any
 * change there makes a new fingerprint, and the next run probes again and rewrites the file.
 * The cache is an optimisation only: a file that cannot be read or written is ignored.
 */

interface CacheFile {
  fingerprint: string;
  /** Unix ms when written. */
  written: number;
  engines: KnownEngine[];
}

/**
 * Findings in which an engine was unavailable are trusted only this long: its probe may have
 * failed for a passing reason (ffmpeg timing out on a loaded machine), which must not hide
 * formats for good. Complete ones are valid until the fingerprint changes.
 */
const DEGRADED_TTL_MS = 10 * 60_000;

const here = dirname(fileURLToPath(import.meta.url));
/** The engine and format code, compiled (dist/src/…) or source (src/…), whichever runs. */
const CODE_DIRS = [join(here, '..', 'engines'), join(here, '..', 'formats')];

export function formatCachePath(env: NodeJS.ProcessEnv): string {
  const home = homedir();
  const base = env.XDG_CACHE_HOME || (home ? join(home, '.cache') : tmpdir());
  return join(base, 'conv', 'formats.json');
}

/*
 * Synchronous on purpose: some hundred stat calls at start-up, with nothing else to do meanwhile,
 * take a third of the time as promises (each a round trip through the thread pool).
 */
function statLine(path: string): string {
  const info = statSync(path, { throwIfNoEntry: false });
  return info ? `${path}:${info.size}:${Math.trunc(info.mtimeMs)}` : `${path}:-`;
}

/**
 * Every code file under `dir` (the engines and their folders) with size and mtime: a changed,
 * added or removed engine file shows (declaration files and maps say nothing).
 */
function treeLines(dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [`${dir}:-`];
  }
  return entries
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => {
      const full = join(dir, e.name);
      if (e.isDirectory()) return treeLines(full);
      return /\.[cm]?[jt]sx?$/.test(e.name) && !/\.d\.[cm]?ts$/.test(e.name) ? [statLine(full)] : [];
    });
}

/** The package root: the nearest directory above this module with the convd package.json. */
function packageRoot(): { root: string; version: string } | null {
  let dir = here;
  for (let depth = 0; depth < 5; depth += 1) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'convd') return { root: dir, version: pkg.version ?? '0.0.0' };
    } catch {
      // Not here: one level up.
    }
    dir = dirname(dir);
  }
  return null;
}

/**
 * What decides which ffmpeg a probe finds: the configured path, the first on PATH, the packaged
 * binary. The package is looked for where npm installs it, not resolved: node's resolver costs
 * more than all the rest (and a package installed elsewhere still changes `.package-lock.json`).
 */
function binaryLines(env: NodeJS.ProcessEnv, modules: string): string[] {
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  // The binaries the engines' descriptors name: where each is configured, its name on PATH, its npm package.
  return engineBinaries().flatMap((binary) => {
    const configured = env[binary.env];
    const onPath = dirs.map((dir) => statLine(join(dir, binary.name))).find((line) => !line.endsWith(':-'));
    return [
      configured ? statLine(configured) : '-',
      onPath ?? '-',
      binary.npm ? statLine(join(modules, binary.npm, `${process.platform}-${process.arch}`, 'package.json')) : '-',
    ];
  });
}

/**
 * A hash of everything the engines' probes depend on (a hundred stat calls, no imports), and of
 * `settings`: what the caller configures its engines with (the daemon's limits show in the
 * engines' details).
 */
export function formatFingerprint(env: NodeJS.ProcessEnv, settings = ''): string {
  const pkg = packageRoot();
  const modules = join(pkg?.root ?? here, 'node_modules');
  const parts = [
    `convd ${pkg?.version ?? '?'}`,
    `node ${process.version} ${process.platform} ${process.arch}`,
    // npm rewrites this file on every install: a changed dependency tree invalidates the cache.
    statLine(join(modules, '.package-lock.json')),
    statLine(join(modules, 'sharp', 'package.json')),
    ...binaryLines(env, modules),
    ...engineDataDirs(env).map(statLine),
    ...CODE_DIRS.flatMap(treeLines),
    `settings ${settings}`,
  ];
  return createHash('sha256').update(parts.join('\n')).digest('hex');
}

function isKnownEngines(value: unknown): value is KnownEngine[] {
  return Array.isArray(value) && value.every((engine: Partial<KnownEngine> | null) =>
    typeof engine?.name === 'string' && typeof engine.status?.available === 'boolean' && Array.isArray(engine.formats) && Array.isArray(engine.pairs));
}

/** The cached findings for `fingerprint`, or null (missing, stale or unreadable). */
export async function readFormatCache(path: string, fingerprint: string): Promise<KnownEngine[] | null> {
  try {
    const file = JSON.parse(readFileSync(path, 'utf8')) as Partial<CacheFile>;
    if (file.fingerprint !== fingerprint || !isKnownEngines(file.engines)) return null;
    const degraded = file.engines.some((engine) => !engine.status.available);
    if (degraded && !(typeof file.written === 'number' && Date.now() - file.written < DEGRADED_TTL_MS)) return null;
    return file.engines;
  } catch {
    return null;
  }
}

/** Writes the findings atomically (temp file + rename): concurrent runs never read half a file. */
export async function writeFormatCache(path: string, fingerprint: string, engines: KnownEngine[]): Promise<void> {
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFile(temp, JSON.stringify({ fingerprint, written: Date.now(), engines } satisfies CacheFile));
    await rename(temp, path);
  } catch {
    await unlink(temp).catch(() => undefined);
  }
}

/** Engines built from cached findings where they hold, and how to cache the findings after a probe. */
export interface FoundEngines {
  engines: LazyEngine[];
  /** Writes the findings once every engine has been probed (once, whoever calls); null: nothing to write. */
  save: (() => Promise<void>) | null;
}

/**
 * The catalog's engines (`make`, given the findings it may skip probes with), from the findings
 * cached at `path` when they hold for `fingerprint()` (which may throw: then nothing is cached),
 * else probed by the registry and their findings written back. `probeAlways`: engines probed
 * whatever the cache says (an office pool warmed at start starts with its probe). The daemon and
 * the in-process CLI both build their engines this way.
 */
export async function enginesFromFindings(options: {
  path: string;
  fingerprint: () => string;
  make: (known: ReadonlyMap<string, KnownEngine>) => LazyEngine[];
  probeAlways?: readonly string[];
}): Promise<FoundEngines> {
  let fingerprint: string;
  try {
    fingerprint = options.fingerprint();
  } catch {
    return { engines: options.make(new Map()), save: null };
  }
  const cached = await readFormatCache(options.path, fingerprint);
  const known = new Map((cached ?? []).map((engine) => [engine.name, engine]));
  for (const name of options.probeAlways ?? []) known.delete(name);
  const engines = options.make(known);
  if (engines.every((engine) => known.has(engine.name))) return { engines, save: null };
  let saved: Promise<void> | null = null;
  return {
    engines,
    save: () => (saved ??= (async () => {
      const found = engines.map((engine) => engine.known()).filter((k): k is KnownEngine => k !== undefined);
      if (found.length === engines.length) await writeFormatCache(options.path, fingerprint, found);
    })()),
  };
}
