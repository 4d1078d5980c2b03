import { chmod, copyFile, mkdir, rename, stat, unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { isExecutableFile, searchPath } from '../process/path-search.ts';

export type BinaryName = 'ffmpeg' | 'ffprobe';

export interface FoundBinary {
  path: string;
  /** Where it was found: the environment variable, PATH, or the npm package. */
  origin: 'env' | 'path' | 'npm';
}

const ENV_VARIABLE: Record<BinaryName, string> = { ffmpeg: 'FFMPEG_PATH', ffprobe: 'FFPROBE_PATH' };
const NPM_SCOPE: Record<BinaryName, string> = { ffmpeg: '@ffmpeg-installer', ffprobe: '@ffprobe-installer' };

export interface FindOptions {
  env?: NodeJS.ProcessEnv;
  /** Where a copy goes when the packaged binary cannot be made executable in place. */
  cacheDir?: string;
}

/**
 * Finds ffmpeg or ffprobe: `FFMPEG_PATH`/`FFPROBE_PATH`, else the first on PATH, else the binary
 * shipped in the `@ffmpeg-installer/<platform>` / `@ffprobe-installer/<platform>` npm package.
 * Returns undefined when none exists. An explicitly configured path is used as given (a wrong one
 * shows up as a failing probe rather than being silently replaced).
 */
export async function findBinary(name: BinaryName, options: FindOptions = {}): Promise<FoundBinary | undefined> {
  const env = options.env ?? process.env;
  const configured = env[ENV_VARIABLE[name]];
  if (configured) return { path: configured, origin: 'env' };
  const onPath = await searchPath(name, env.PATH ?? '');
  if (onPath) return { path: onPath, origin: 'path' };
  const packaged = packagedBinary(name);
  if (!packaged) return undefined;
  const runnable = await ensureExecutable(packaged.file, join(options.cacheDir ?? defaultCacheDir(env), packaged.id));
  return { path: runnable, origin: 'npm' };
}

/** The platform package's binary, resolved from this module (works wherever npm hoisted it). */
function packagedBinary(name: BinaryName): { file: string; id: string } | undefined {
  const require = createRequire(import.meta.url);
  const platformPackage = `${NPM_SCOPE[name]}/${process.platform}-${process.arch}`;
  try {
    const manifestPath = require.resolve(`${platformPackage}/package.json`);
    const manifest = require(manifestPath) as { version?: string };
    const file = join(dirname(manifestPath), process.platform === 'win32' ? `${name}.exe` : name);
    return { file, id: `${platformPackage.replace('/', '+')}@${manifest.version ?? '0'}` };
  } catch {
    return undefined;
  }
}

function defaultCacheDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CACHE_HOME || (homedir() ? join(homedir(), '.cache') : tmpdir());
  return join(base, 'convd', 'bin');
}

/**
 * Makes `file` runnable. npm unpacks the packaged binaries without running their install scripts
 * (npm 11 does not run them unless allowed, `npm ci --ignore-scripts` never does), so the execute
 * bit may be missing, and the `chmod u+x` those scripts do leaves a root-installed tree unrunnable
 * for other users. Order: already executable -> use it; we may chmod it -> add the x bits;
 * otherwise copy it, once, into `cacheDir` with mode 0755 and use the copy.
 */
export async function ensureExecutable(file: string, cacheDir: string): Promise<string> {
  if (await isExecutableFile(file)) return file;
  try {
    const mode = (await stat(file)).mode;
    await chmod(file, mode | 0o111);
    if (await isExecutableFile(file)) return file;
  } catch {
    // Not the owner (e.g. node_modules installed by root): fall through to a private copy.
  }
  const copy = join(cacheDir, file.split(/[\\/]/).pop() ?? 'binary');
  if (await isExecutableFile(copy) && (await stat(copy)).size === (await stat(file)).size) return copy;
  await mkdir(cacheDir, { recursive: true });
  // Copy under a unique name and rename: two processes starting at once never see half a binary.
  const partial = `${copy}.${process.pid}.${Date.now()}.part`;
  try {
    await copyFile(file, partial);
    await chmod(partial, 0o755);
    await rename(partial, copy);
  } catch (error) {
    await unlink(partial).catch(() => undefined);
    throw error;
  }
  return copy;
}
