/**
 * The `conv` benches:
 * conv-version (`conv --version`) and conv-formats (`conv formats --json`): wall time against
 *     `node -e 0` (target <= 2.5x): the compiled bin, in-process (no server), median of
 *     interleaved runs;
 * conv-batch: 100 small PNGs converted to WebP by ONE `conv convert … -o dir/` in-process call
 *     against ImageMagick on the same files (target: faster). ImageMagick is found at its real path
 *     (/usr/bin/magick, /usr/local/bin/magick, /usr/bin/convert; CONV_BENCH_IMAGEMAGICK overrides)
 *     and checked to be an ImageMagick binary; without it the bench says the baseline is missing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { photoPng } from './lib/images.ts';
import { freshDir, removeDir, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONV = join(ROOT, 'bin', 'conv');
const STARTUP_RUNS = 31;
const STARTUP_TARGET = 2.5;
const IMAGES = 100;
const WIDTH = 320;
const HEIGHT = 240;
/** conv convert's default concurrency; ImageMagick's per-file baseline gets the same. */
const PARALLEL = 4;
const BATCH_ROUNDS = 3;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Wall time of one run in ms; throws if it fails (a failing command measures nothing). */
function timeRun(command: string, args: string[], env: NodeJS.ProcessEnv, expectOutput?: RegExp): number {
  const started = performance.now();
  const result = spawnSync(command, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  if (expectOutput && !expectOutput.test(result.stdout)) throw new Error(`${args.join(' ')}: unexpected output ${result.stdout.slice(0, 200)}`);
  return ms;
}

/** An environment with no settings, so `conv` runs in-process, and its own cache dir. */
function isolatedEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') };
}

async function benchStartup(title: string, convArgs: string[], expectOutput: RegExp): Promise<BenchResult> {
  const home = await tempDir(`cli-${convArgs[0]!.replace(/^-+/, '')}`);
  try {
    const env = isolatedEnv(home);
    // The first run of `formats` probes the engines and caches the registry (engines/findings-cache.ts):
    // what every later run, the case that matters in a CI loop, starts from.
    const firstMs = timeRun(process.execPath, [CONV, ...convArgs], env, expectOutput);
    for (let i = 0; i < 3; i++) {
      timeRun(process.execPath, ['-e', '0'], env);
      timeRun(process.execPath, [CONV, ...convArgs], env, expectOutput);
    }
    const node: number[] = [];
    const conv: number[] = [];
    // Interleaved, so load from elsewhere on the machine hits both sides alike.
    for (let i = 0; i < STARTUP_RUNS; i++) {
      node.push(timeRun(process.execPath, ['-e', '0'], env));
      conv.push(timeRun(process.execPath, [CONV, ...convArgs], env, expectOutput));
    }
    const ratio = median(conv) / median(node);
    const best = Math.min(...conv) / Math.min(...node);
    return {
      title,
      figures: `conv ${median(conv).toFixed(0)} ms vs node -e 0 ${median(node).toFixed(0)} ms`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${STARTUP_TARGET}x`,
      pass: ratio <= STARTUP_TARGET,
      notes: [
        `medians of ${STARTUP_RUNS} interleaved runs of the compiled bin (dist/), no server configured; best runs: ${Math.min(...conv).toFixed(0)} vs ${Math.min(...node).toFixed(0)} ms = ${best.toFixed(2)}x`,
        ...(convArgs[0] === 'formats' ? [`first run (engines probed, format cache written): ${firstMs.toFixed(0)} ms`] : []),
        `load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
      ],
    };
  } finally {
    await removeDir(home);
  }
}

export const benchConvVersion = () => benchStartup('conv --version start-up', ['--version'], /^\d+\.\d+\.\d+/);
export const benchConvFormats = () => benchStartup('conv formats --json start-up (in-process)', ['formats', '--json'], /^\{"data":\[/);

interface ImageMagick {
  path: string;
  version: string;
  /** argv prefix for a one-file conversion and for mogrify (IM7: `magick …`, `magick mogrify …`). */
  convert: string[];
  mogrify: { command: string; args: string[] };
}

function isElf(path: string): boolean {
  try {
    const fd = openSync(realpathSync(path), 'r');
    const head = Buffer.alloc(4);
    readSync(fd, head, 0, 4, 0);
    closeSync(fd);
    return head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } catch {
    return false;
  }
}

/**
 * The real ImageMagick, by path. /usr/local/bin/convert on some machines is a stand-in script
 * (not ImageMagick, or a wrapper whose start-up would be measured): only ELF binaries that say
 * "ImageMagick" in -version count.
 */
function findImageMagick(): ImageMagick | null {
  const candidates = process.env.CONV_BENCH_IMAGEMAGICK
    ? [process.env.CONV_BENCH_IMAGEMAGICK]
    : ['/usr/bin/magick', '/usr/local/bin/magick', '/usr/bin/convert'];
  for (const path of candidates) {
    if (!isElf(path)) continue;
    const probe = spawnSync(path, ['-version'], { encoding: 'utf8' });
    const version = /Version: (ImageMagick \S+)/.exec(probe.stdout ?? '')?.[1];
    if (probe.status !== 0 || !version) continue;
    const seven = path.endsWith('magick');
    const mogrify = seven ? { command: path, args: ['mogrify'] } : { command: path.replace(/convert$/, 'mogrify'), args: [] };
    return { path, version, convert: [path], mogrify };
  }
  return null;
}

/** GNU time, when installed: CPU time of a child, which load from elsewhere disturbs far less than wall time. */
const GNU_TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : null;

/** Runs a command to its end; with `cpu`, adds its user + system time (ms) when GNU time is there. */
async function run(command: string, args: string[], env?: NodeJS.ProcessEnv, cpu?: { ms: number }): Promise<void> {
  if (cpu && GNU_TIME) {
    const file = join(tmpdir(), `conv-bench-time-${process.pid}-${Math.random().toString(36).slice(2)}`);
    await run(GNU_TIME, ['-f', '%U %S', '-o', file, command, ...args], env);
    const [user, system] = (await readFile(file, 'utf8')).trim().split(/\s+/).slice(-2).map(Number);
    await rm(file, { force: true });
    cpu.ms += ((user ?? 0) + (system ?? 0)) * 1000;
    return;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr.slice(0, 500)}`))));
  });
}

async function timed(work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** Every output decodes as a WebP of the input's size. */
async function checkOutputs(dir: string, names: string[]): Promise<string | null> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.webp')).sort();
  if (files.length !== names.length) return `${files.length} WebP files in ${dir}, expected ${names.length}`;
  for (const name of files) {
    const meta = await sharp(await readFile(join(dir, name))).metadata();
    if (meta.format !== 'webp' || meta.width !== WIDTH || meta.height !== HEIGHT) return `${name} is ${meta.format} ${meta.width}x${meta.height}`;
  }
  return null;
}

export async function benchConvBatch(): Promise<BenchResult> {
  const dir = await tempDir('cli-batch');
  const notes: string[] = [];
  const base = { title: `${IMAGES} PNG -> WebP, one conv convert call in-process`, target: 'faster than ImageMagick' };
  try {
    const inputDir = join(dir, 'in');
    await mkdir(inputDir);
    const names = Array.from({ length: IMAGES }, (_, i) => `img-${String(i).padStart(3, '0')}.png`);
    const inputs = await Promise.all(names.map((_, i) => photoPng(WIDTH, HEIGHT, i + 1)));
    await Promise.all(inputs.map((png, i) => writeFile(join(inputDir, names[i]!), png)));
    const averageKb = inputs.reduce((sum, png) => sum + png.length, 0) / inputs.length / 1024;
    const env = isolatedEnv(dir);
    const paths = names.map((name) => join(inputDir, name));
    const convOut = join(dir, 'conv-out');
    const convCpu = { ms: 0 };
    const convOnce = async (cpu?: { ms: number }) => {
      await freshDir(convOut);
      return timed(() => run(process.execPath, [CONV, 'convert', ...paths, '--to', 'webp', '-O', 'quality=80', '-o', `${convOut}/`, '-q'], env, cpu));
    };
    await convOnce(); // fills the format cache, as any earlier conv run on the machine would have

    const magick = findImageMagick();
    const imOut = join(dir, 'im-out');
    const perFile = async (im: ImageMagick) => {
      await freshDir(imOut);
      let next = 0;
      return timed(() => Promise.all(Array.from({ length: PARALLEL }, async () => {
        while (next < names.length) {
          const i = next++;
          await run(im.convert[0]!, [...im.convert.slice(1), paths[i]!, '-strip', '-quality', '80', join(imOut, names[i]!.replace(/\.png$/, '.webp'))]);
        }
      })).then(() => undefined));
    };
    // One convert call over every file, each written under its own name, as one conv call does.
    const oneCallCpu = { ms: 0 };
    const oneCall = async (im: ImageMagick) => {
      await freshDir(imOut);
      return timed(() => run(im.convert[0]!, [...im.convert.slice(1), ...paths, '-strip', '-quality', '80', '-set', 'filename:f', '%t', join(imOut, '%[filename:f].webp')], undefined, oneCallCpu));
    };
    const mogrify = async (im: ImageMagick) => {
      await freshDir(imOut);
      return timed(() => run(im.mogrify.command, [...im.mogrify.args, '-path', imOut, '-format', 'webp', '-strip', '-quality', '80', ...paths]));
    };

    const convRuns: number[] = [];
    const perFileRuns: number[] = [];
    const oneCallRuns: number[] = [];
    const mogrifyRuns: number[] = [];
    for (let round = 0; round < BATCH_ROUNDS; round++) {
      convRuns.push(await convOnce(convCpu));
      if (round === 0) {
        const problem = await checkOutputs(convOut, names);
        if (problem) notes.push(`INVALID: conv ${problem}`);
      }
      if (magick) {
        perFileRuns.push(await perFile(magick));
        if (round === 0) {
          const problem = await checkOutputs(imOut, names);
          if (problem) notes.push(`INVALID: ImageMagick per file ${problem}`);
        }
        oneCallRuns.push(await oneCall(magick));
        if (round === 0) {
          const problem = await checkOutputs(imOut, names);
          if (problem) notes.push(`INVALID: ImageMagick one call ${problem}`);
        }
        mogrifyRuns.push(await mogrify(magick));
        if (round === 0) {
          const problem = await checkOutputs(imOut, names);
          if (problem) notes.push(`INVALID: mogrify ${problem}`);
        }
      }
    }
    const convMs = median(convRuns);
    const setup = `${WIDTH}x${HEIGHT} photo-like PNGs (${averageKb.toFixed(0)} KiB average), quality 80, metadata stripped; medians of ${BATCH_ROUNDS} alternating rounds`;
    if (!magick) {
      return {
        ...base,
        figures: `conv ${(convMs / 1000).toFixed(2)} s vs ImageMagick: baseline missing`,
        ratio: '-',
        pass: false,
        notes: [
          'ImageMagick not found (looked for /usr/bin/magick, /usr/local/bin/magick, /usr/bin/convert, ELF binaries only; set CONV_BENCH_IMAGEMAGICK): apt-get install -y imagemagick',
          setup,
          ...notes,
        ],
      };
    }
    const perFileMs = median(perFileRuns);
    const oneCallMs = median(oneCallRuns);
    const mogrifyMs = median(mogrifyRuns);
    // The faster way of running `convert` is the baseline; mogrify (ImageMagick's batch tool, not
    // `convert`) is reported beside it.
    const baselineMs = Math.min(perFileMs, oneCallMs);
    const ratio = convMs / baselineMs;
    return {
      ...base,
      figures: `conv ${(convMs / 1000).toFixed(2)} s vs ImageMagick ${(baselineMs / 1000).toFixed(2)} s`,
      ratio: `${ratio.toFixed(2)}x`,
      pass: ratio < 1 && notes.length === 0,
      notes: [
        `${magick.version} at ${magick.path}: one convert call over all files ${(oneCallMs / 1000).toFixed(2)} s; one convert per file, ${PARALLEL} at a time, ${(perFileMs / 1000).toFixed(2)} s (baseline: the faster); for reference, mogrify over all files ${(mogrifyMs / 1000).toFixed(2)} s = conv ${(convMs / mogrifyMs).toFixed(2)}x`,
        `conv: whole process (start-up included), -j ${PARALLEL} (its default), in-process worker pool; ${setup}`,
        `each round (ms): conv ${convRuns.map((ms) => ms.toFixed(0)).join(' ')}; one convert call ${oneCallRuns.map((ms) => ms.toFixed(0)).join(' ')}`,
        ...(GNU_TIME ? [`CPU time (user + system) per run: conv ${(convCpu.ms / BATCH_ROUNDS / 1000).toFixed(2)} s vs one convert call ${(oneCallCpu.ms / BATCH_ROUNDS / 1000).toFixed(2)} s (conv spreads its work over ${availableParallelism()} cores; ImageMagick here runs on one)`] : []),
        `load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
