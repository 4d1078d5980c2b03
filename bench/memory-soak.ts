/**
 * memory-soak: Memory that comes back: 300 conversions of large images (2000x1500 up to 6000x4000,
 * JPEG and PNG sources, webp/avif/jpg targets in turn, 4 in flight) through the compiled daemon,
 * its RSS (VmRSS of /proc/<pid>/status) sampled every 100 ms: at idle before (after one small
 * conversion to each target, so that every codec is loaded), the peak overall, the peak while the
 * first 50 and while the last 50 conversions ran, and 60 s after the last one ended. Done twice in
 * the same run: with the fix (the allocator environment of deploy/convd.service: jemalloc preloaded
 * where libjemalloc2 is installed, MALLOC_MMAP_THRESHOLD_ for glibc's malloc where it is not) and
 * without it (glibc's malloc, nothing set), which is the baseline. Every image conversion runs in
 * the daemon's own process (sharp); the RSS of any engine process it starts is printed too.
 *
 * Passes when, with the fix, the daemon is back within twice its idle RSS plus the memory sharp's
 * operation cache may keep (src/engines/image/sharp-module.ts) 60 s after the last conversion, and
 * the peak of the last 50 conversions is at most 15 % above that of the first 50 (a peak that
 * grows with the number of images is a heap that fragments). The ratio printed is the fixed
 * daemon's RSS 60 s after against the baseline's.
 *
 * BENCH_SOAK_COUNT=60 makes a quick trial (the windows shrink to a third of the count);
 * BENCH_SOAK_SETTLE=20 waits 20 s instead of 60 after the last conversion; BENCH_SOAK_ONLY=fixed
 * or =baseline runs one daemon only (no ratio, not judged); BENCH_SOAK_FIXED_ENV="NAME=value ..."
 * replaces the fix's environment (to measure another setting: `MALLOC_ARENA_MAX=2`,
 * `NODE_OPTIONS=--import=file:///path/to/settings.mjs` for sharp settings made in the daemon).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody, send } from './lib/http.ts';
import { photoJpeg, photoPng, tinyPng } from './lib/images.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { SHARP_CACHE } from '../src/engines/image/sharp-module.ts';
import type { BenchResult } from './types.ts';

const COUNT = Number(process.env.BENCH_SOAK_COUNT ?? 300);
const SETTLE_S = Number(process.env.BENCH_SOAK_SETTLE ?? 60);
const ONLY = process.env.BENCH_SOAK_ONLY;
const IN_FLIGHT = 4;
const SAMPLE_MS = 100;
/** The first and the last conversions whose peaks are compared. */
const WINDOW = Math.min(50, Math.max(1, Math.floor(COUNT / 3)));
const TARGETS = ['webp', 'avif', 'jpg'] as const;
/** Nothing of the fix: glibc's malloc with its defaults, whatever the bench's own shell sets. */
const BASELINE_ENV: Record<string, string | undefined> = { LD_PRELOAD: undefined, MALLOC_ARENA_MAX: undefined, MALLOC_MMAP_THRESHOLD_: undefined, MALLOC_TRIM_THRESHOLD_: undefined, MALLOC_CONF: undefined };
/** Distinct sources; 7 of them against 3 targets: every pair comes once in each 21 conversions. */
const SOURCES: Array<{ width: number; height: number; format: 'jpg' | 'png' }> = [
  { width: 2000, height: 1500, format: 'jpg' },
  { width: 3000, height: 2000, format: 'png' },
  { width: 4000, height: 3000, format: 'jpg' },
  { width: 4000, height: 3000, format: 'png' },
  { width: 5000, height: 3500, format: 'jpg' },
  { width: 6000, height: 4000, format: 'jpg' },
  { width: 6000, height: 4000, format: 'png' },
];

/** Where Debian and Ubuntu's libjemalloc2 (amd64) puts the library. */
const JEMALLOC = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
/** glibc's malloc: blocks of 128 KiB and more always mapped on their own, unmapped when freed. */
const MMAP_THRESHOLD = '131072';

/**
 * What deploy/convd.service sets for the allocator: jemalloc preloaded, and glibc's mmap threshold
 * fixed (what counts where jemalloc is not installed; ignored under jemalloc).
 */
function fixedEnv(): { env: Record<string, string | undefined>; label: string } {
  const given = process.env.BENCH_SOAK_FIXED_ENV;
  if (given !== undefined) {
    const env: Record<string, string | undefined> = { ...BASELINE_ENV };
    for (const pair of given.split(/\s+/).filter(Boolean)) {
      const at = pair.indexOf('=');
      env[pair.slice(0, at)] = pair.slice(at + 1);
    }
    return { env, label: given || 'nothing set' };
  }
  const env = { ...BASELINE_ENV, MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD };
  if (existsSync(JEMALLOC)) return { env: { ...env, LD_PRELOAD: JEMALLOC }, label: `jemalloc (LD_PRELOAD; MALLOC_MMAP_THRESHOLD_=${MMAP_THRESHOLD} set too, ignored)` };
  return { env, label: `glibc, MALLOC_MMAP_THRESHOLD_=${MMAP_THRESHOLD} (libjemalloc2 is not installed)` };
}

interface Source {
  name: string;
  type: string;
  data: Buffer;
}

async function makeSources(): Promise<Source[]> {
  const sources: Source[] = [];
  for (const [index, { width, height, format }] of SOURCES.entries()) {
    const data = format === 'jpg' ? await photoJpeg(width, height, index + 1) : await photoPng(width, height, index + 1);
    sources.push({ name: `photo-${width}x${height}.${format}`, type: format === 'jpg' ? 'image/jpeg' : 'image/png', data });
  }
  return sources;
}

interface Conversion {
  id: string;
  status: string;
  error?: { code: string; message: string } | null;
}

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** Submits one conversion and waits for its end (`wait` on the submission, then on GET). */
async function convert(daemon: BenchDaemon, source: Source, target: string): Promise<Conversion> {
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const { contentType, body } = multipartBody({ target, wait: '30' }, source.name, source.type, source.data);
  const created = await send(daemon, 'POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  if (created.status !== 200 && created.status !== 202) throw new Error(`${source.name} -> ${target}: answered ${created.status} ${created.body.toString().slice(0, 200)}`);
  let conversion = json<Conversion>(created);
  while (!ENDED.has(conversion.status)) {
    const polled = await send(daemon, 'GET', `/v1/conversions/${conversion.id}?wait=30`, auth);
    if (polled.status !== 200) throw new Error(`${source.name} -> ${target}: GET answered ${polled.status}`);
    conversion = json<Conversion>(polled);
  }
  return conversion;
}

/** The daemon's descendants (engine hosts, their children), from /proc/<pid>/task/<pid>/children. */
async function descendants(pid: number): Promise<number[]> {
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean).map(Number);
  const all = [...children];
  for (const child of children) all.push(...(await descendants(child)));
  return all;
}

async function rssKbOf(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
}

interface Soak {
  label: string;
  idleKb: number;
  peakKb: number;
  peakFirstKb: number;
  peakLastKb: number;
  /** RSS after the last conversion ended, by seconds. */
  afterKb: Map<number, number>;
  enginePeakKb: number;
  engineProcesses: number;
  seconds: number;
  /** CPU time of the daemon over the conversions (sharp's work included: it runs there). */
  cpuSeconds: number;
  failures: string[];
}

const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

async function soak(label: string, env: Record<string, string | undefined>, sources: Source[], dataDir: string): Promise<Soak> {
  const daemon = await startBenchDaemon({ dataDir, env });
  try {
    const tiny = { name: 'warm.png', type: 'image/png', data: await tinyPng() };
    for (const target of TARGETS) {
      const warmed = await convert(daemon, tiny, target);
      if (warmed.status !== 'succeeded') throw new Error(`warm-up to ${target} ended ${warmed.status}`);
    }
    await sleep(2000);
    let idleKb = 0;
    for (let i = 0; i < 10; i++) {
      idleKb = Math.max(idleKb, (await daemon.memory()).rssKb);
      await sleep(100);
    }

    let submitted = 0;
    let completed = 0;
    let peakKb = 0;
    let peakFirstKb = 0;
    let peakLastKb = 0;
    let enginePeakKb = 0;
    const engines = new Set<number>();
    let sampling = true;
    const sampler = (async () => {
      for (let tick = 0; sampling; tick++) {
        const rss = (await daemon.memory()).rssKb;
        peakKb = Math.max(peakKb, rss);
        if (completed < WINDOW) peakFirstKb = Math.max(peakFirstKb, rss);
        if (submitted > COUNT - WINDOW) peakLastKb = Math.max(peakLastKb, rss);
        if (tick % 10 === 0) {
          const pids = await descendants(daemon.pid);
          for (const pid of pids) engines.add(pid);
          let sum = 0;
          for (const pid of pids) sum += await rssKbOf(pid);
          enginePeakKb = Math.max(enginePeakKb, sum);
        }
        await sleep(SAMPLE_MS);
      }
    })();

    const failures: string[] = [];
    const cpuBefore = await cpuTimeMs(daemon.pid);
    const started = performance.now();
    let seconds: number;
    let cpuSeconds: number;
    try {
      await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
        while (submitted < COUNT) {
          const index = submitted++;
          const source = sources[index % sources.length]!;
          const target = TARGETS[index % TARGETS.length]!;
          const conversion = await convert(daemon, source, target);
          if (conversion.status !== 'succeeded') failures.push(`${source.name} -> ${target}: ${conversion.status} ${conversion.error?.code ?? ''} ${conversion.error?.message ?? ''}`);
          completed++;
        }
      }));
      seconds = (performance.now() - started) / 1000;
      cpuSeconds = ((await cpuTimeMs(daemon.pid)) - cpuBefore) / 1000;
    } finally {
      // Stopped before the daemon is, whatever happened: its /proc files go with it.
      sampling = false;
      await sampler.catch(() => {});
    }

    const afterKb = new Map<number, number>();
    const ended = performance.now();
    for (const mark of [...new Set([5, 20, SETTLE_S])].filter((s) => s <= SETTLE_S).sort((a, b) => a - b)) {
      const wait = ended + mark * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
      afterKb.set(mark, (await daemon.memory()).rssKb);
    }
    return { label, idleKb, peakKb, peakFirstKb, peakLastKb, afterKb, enginePeakKb, engineProcesses: engines.size, seconds, cpuSeconds, failures };
  } finally {
    await daemon.stop();
  }
}

function describe(run: Soak): string {
  const after = [...run.afterKb].map(([s, kb]) => `${s} s ${mb(kb)}`).join(', ');
  const engines = run.engineProcesses === 0 ? 'no engine process (sharp runs in the daemon)' : `${run.engineProcesses} engine processes, peak ${mb(run.enginePeakKb)} together`;
  return `${run.label}: idle ${mb(run.idleKb)}, peak ${mb(run.peakKb)} (first ${WINDOW} ${mb(run.peakFirstKb)}, last ${WINDOW} ${mb(run.peakLastKb)}), after the last: ${after}; ${COUNT} conversions in ${run.seconds.toFixed(0)} s, daemon CPU ${run.cpuSeconds.toFixed(0)} s; ${engines}`;
}

export async function benchMemorySoak(): Promise<BenchResult> {
  const dir = await tempDir('soak');
  try {
    const sources = await makeSources();
    const fixed = fixedEnv();
    const runs: { fixed?: Soak; baseline?: Soak } = {};
    if (ONLY !== 'baseline') runs.fixed = await soak(`fixed, ${fixed.label}`, fixed.env, sources, `${dir}/fixed`);
    if (ONLY !== 'fixed') runs.baseline = await soak('baseline, glibc malloc', BASELINE_ENV, sources, `${dir}/baseline`);

    const notes: string[] = [
      `${sources.length} sources (${sources.map((s) => `${s.name} ${(s.data.length / 1024 / 1024).toFixed(1)} MB`).join(', ')}), targets ${TARGETS.join('/')} in turn, ${IN_FLIGHT} in flight, RSS sampled every ${SAMPLE_MS} ms`,
      ...[runs.fixed, runs.baseline].flatMap((run) => (run ? [describe(run)] : [])),
    ];
    for (const run of [runs.fixed, runs.baseline]) {
      if (run && run.failures.length > 0) notes.push(`INVALID: ${run.label}: ${run.failures.length} conversions did not succeed, e.g. ${run.failures[0]}`);
    }
    const judged = runs.fixed ?? runs.baseline!;
    const settledKb = judged.afterKb.get(SETTLE_S)!;
    const limitKb = 2 * judged.idleKb + SHARP_CACHE.memory * 1024;
    const growth = judged.peakLastKb / judged.peakFirstKb;
    const pass = settledKb <= limitKb && growth <= 1.15 && notes.every((note) => !note.startsWith('INVALID')) && runs.fixed !== undefined && runs.baseline !== undefined;
    const figure = (run: Soak | undefined, name: string) => (run ? `${name} ${mb(run.afterKb.get(SETTLE_S)!)} ${SETTLE_S} s after (idle ${mb(run.idleKb)}, peak first/last ${WINDOW} ${mb(run.peakFirstKb)}/${mb(run.peakLastKb)})` : `${name} not run`);
    return {
      title: `RSS over ${COUNT} large images`,
      figures: `${figure(runs.fixed, 'fixed')} vs ${figure(runs.baseline, 'baseline')}`,
      ratio: runs.fixed && runs.baseline ? `${(runs.fixed.afterKb.get(SETTLE_S)! / runs.baseline.afterKb.get(SETTLE_S)!).toFixed(2)}x` : '-',
      target: `${SETTLE_S} s after <= 2 x idle + ${SHARP_CACHE.memory} MB (sharp's cache) = ${mb(limitKb)}, peak last/first ${WINDOW} <= 1.15 (${growth.toFixed(2)})`,
      pass,
      notes,
    };
  } finally {
    await removeDir(dir);
  }
}
