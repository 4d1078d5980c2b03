/**
 * convert-e2e: 200 small PNG -> WebP conversions end to end through the daemon (multipart
 * submission with `wait`, then download) against calling sharp directly in a loop over the same
 * files. Every output is checked to be a WebP of the right size.
 *
 * Judged with the same number of images converted at once on both sides. sharp on glibc runs one
 * libvips thread per image (docs/benchmarks.md), so the baseline's parallelism is the libuv thread pool's:
 * with 8 calls in flight, 4 images are converted at once. The daemon's equivalent is its worker
 * pool, run here with as many workers. The daemon at its default (one worker per core) is
 * measured too and printed beside it, not judged: on 2 cores its two single-threaded pipelines
 * leave a core idle whenever one of them waits for the service's own work between images.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { steadyDataDir } from './lib/steady-data-dir.ts';
import { warmDaemon } from './lib/warm-daemon.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { photoPng } from './lib/images.ts';
import { freshDir, removeDir, tempDir } from './lib/processes.ts';
import { SERVICE_CPU_TARGET_MS, type BenchResult } from './types.ts';

const COUNT = 200;
const WIDTH = 480;
const HEIGHT = 360;
/** Requests in flight against the daemon, and sharp calls in flight for the baseline. */
const PARALLEL = 8;
/** Images the baseline converts at once: its calls in flight, up to libuv's pool (default 4). */
const BASELINE_AT_ONCE = Math.min(PARALLEL, Number(process.env.UV_THREADPOOL_SIZE) || 4);
/** Alternating rounds, best of each: on a shared machine the best is the least disturbed. */
const ROUNDS = 2;
/**
 * Untimed rounds of these photos through each daemon before the timed ones, after the warm-up
 * every bench of single conversions gives its daemon (3,000 small images: bench/lib/warm-daemon.ts).
 * convd is a long-running process and the figure is its steady state: V8 only optimises the
 * request path after some thousands of requests, and the first 200 conversions after a start
 * cost up to a sixth more CPU than the 600th to 800th (measured; printed as the cold figure).
 * sharp's work is native code that needs no warming; the baseline gets one untimed round all the
 * same (file cache, allocator).
 */
const WARMUP_ROUNDS = 3;

/** `parallel` lanes taking the next item in turn; `lane` tells a lane's work which one it is. */
async function inParallel<T>(items: T[], parallel: number, work: (item: T, index: number, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async (_, lane) => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index, lane);
    }
  }));
}

async function convertThroughDaemon(daemon: BenchDaemon, connection: WireConnection, name: string, png: Buffer): Promise<Buffer> {
  const { contentType, body } = multipartBody({ target: 'webp', wait: '30' }, name, 'image/png', png);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  const conversion = json<{ id: string; status: string; error: unknown }>(created);
  if (created.status !== 200 || conversion.status !== 'succeeded') {
    throw new Error(`${name}: answered ${created.status} ${conversion.status} ${JSON.stringify(conversion.error)}`);
  }
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`${name}: download answered ${download.status}`);
  return download.body;
}

async function checkWebp(outputs: Buffer[]): Promise<string | null> {
  for (const [index, output] of outputs.entries()) {
    const meta = await sharp(output).metadata();
    if (meta.format !== 'webp' || meta.width !== WIDTH || meta.height !== HEIGHT) {
      return `output ${index} is ${meta.format} ${meta.width}x${meta.height}`;
    }
  }
  return null;
}

interface Run {
  ms: number;
  /** CPU of the daemon process (0 for the baseline, which runs in this process). */
  serverCpuMs: number;
  /** CPU of this process: the client for convd, sharp itself for the baseline. */
  clientCpuMs: number;
  problem: string | null;
}

/** Times one round of 200 conversions and checks its outputs (after the clock stops). */
async function timed(serverPid: number | null, round: () => Promise<Buffer[]>): Promise<Run> {
  const serverBefore = serverPid === null ? 0 : await cpuTimeMs(serverPid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const outputs = await round();
  const ms = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  const serverCpuMs = serverPid === null ? 0 : (await cpuTimeMs(serverPid)) - serverBefore;
  return { ms, serverCpuMs, clientCpuMs: (client.user + client.system) / 1000, problem: await checkWebp(outputs) };
}

function best(runs: Run[]): Run {
  return runs.reduce((a, b) => (b.ms < a.ms ? b : a));
}

/** One daemon's figures: its warm rounds (best of), its first round after starting (cold). */
interface DaemonRuns {
  workers: number;
  warm: Run;
  cold: Run;
  problems: string[];
}

export async function benchConvertEndToEnd(): Promise<BenchResult> {
  const dir = await tempDir('e2e');
  try {
    const inputs = await Promise.all(Array.from({ length: COUNT }, (_, i) => photoPng(WIDTH, HEIGHT, i + 1)));
    const inputDir = join(dir, 'in');
    const outputDir = join(dir, 'out');
    await mkdir(inputDir);
    await Promise.all(inputs.map((png, i) => writeFile(join(inputDir, `photo-${i}.png`), png)));
    const averageKb = inputs.reduce((sum, png) => sum + png.length, 0) / inputs.length / 1024;

    const sharpRuns: Run[] = [];
    // What the engine does, without the service: file in, sharp, file out, into a fresh dir made
    // before the clock starts (new files, as convd writes, not the last round's rewritten).
    const sharpRound = async (): Promise<Buffer[]> => {
      await inParallel(inputs, PARALLEL, async (_png, i) => {
        await sharp(join(inputDir, `photo-${i}.png`)).webp().toFile(join(outputDir, `photo-${i}.webp`));
      });
      return Promise.all(inputs.map((_png, i) => readFile(join(outputDir, `photo-${i}.webp`))));
    };
    const timedSharpRound = async (): Promise<void> => {
      await freshDir(outputDir);
      sharpRuns.push(await timed(null, sharpRound));
    };
    await freshDir(outputDir);
    await sharpRound(); // untimed: loads libvips' codecs, fills the file cache

    let dataDirNote = '';
    let warmNote = '';
    const throughDaemon = async (workers: number): Promise<DaemonRuns> => {
      const steady = await steadyDataDir(join(dir, `data-${workers}`));
      dataDirNote = steady.note;
      const daemon = await startBenchDaemon({ dataDir: join(dir, `data-${workers}`), apiKey: steady.apiKey, args: ['--workers', String(workers)] });
      // One keep-alive connection per request in flight, as node:http's agent would keep.
      const connections = Array.from({ length: PARALLEL }, () => new WireConnection(daemon.host, daemon.port));
      const round = async (): Promise<Buffer[]> => {
        const outputs: Buffer[] = new Array(COUNT);
        await inParallel(inputs, PARALLEL, async (png, i, lane) => {
          outputs[i] = await convertThroughDaemon(daemon, connections[lane]!, `photo-${i}.png`, png);
        });
        return outputs;
      };
      try {
        const cold = await timed(daemon.pid, round);
        warmNote = (await warmDaemon(daemon)).note;
        const warmups: Run[] = [cold];
        for (let index = 1; index < WARMUP_ROUNDS; index++) warmups.push(await timed(daemon.pid, round));
        const runs: Run[] = [];
        for (let index = 0; index < ROUNDS; index++) {
          await timedSharpRound();
          runs.push(await timed(daemon.pid, round));
        }
        const problems = [...warmups, ...runs].flatMap((run) => (run.problem ? [`INVALID: convd (${workers} workers) ${run.problem}`] : []));
        return { workers, warm: best(runs), cold: warmups[0]!, problems };
      } finally {
        for (const connection of connections) connection.close();
        await daemon.stop();
      }
    };

    const matched = await throughDaemon(BASELINE_AT_ONCE);
    const defaults = availableParallelism() === BASELINE_AT_ONCE ? matched : await throughDaemon(availableParallelism());
    const baseline = best(sharpRuns);
    const notes = [
      ...sharpRuns.flatMap((run) => (run.problem ? [`INVALID: sharp baseline ${run.problem}`] : [])),
      ...matched.problems,
      ...defaults.problems,
    ];
    const ratio = matched.warm.ms / baseline.ms;
    const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const busy = (run: Run) => ((run.serverCpuMs + run.clientCpuMs) / run.ms).toFixed(2);
    const atDefault = defaults === matched ? '' : `; ${seconds(defaults.warm.ms)} = ${(defaults.warm.ms / baseline.ms).toFixed(2)}x at its default ${defaults.workers}, not judged`;
    return {
      title: `${COUNT} PNG -> WebP end to end`,
      figures: `convd ${seconds(matched.warm.ms)} (--workers ${matched.workers}, as many at once as sharp${atDefault}) vs sharp ${seconds(baseline.ms)}`,
      ratio: `${ratio.toFixed(2)}x`,
      target: '<= 1.5x',
      pass: ratio <= 1.5 && notes.length === 0,
      notes: [
        `${WIDTH}x${HEIGHT} photo-like PNGs (${averageKb.toFixed(0)} KiB average), ${PARALLEL} in flight on both sides; convd: multipart submit with wait=30 + download over ${PARALLEL} raw keep-alive connections (bench/lib/http-wire.ts); sharp: file to file`,
        `judged with ${BASELINE_AT_ONCE} images converted at once on both sides: sharp's calls run on libuv's ${BASELINE_AT_ONCE} threads (one libvips thread per image on glibc), convd runs --workers ${matched.workers}`,
        `convd: best of ${ROUNDS} rounds per daemon, after ${WARMUP_ROUNDS} untimed ones (the first ${COUNT} after the judged daemon started, cold JIT, took ${seconds(matched.cold.ms)}); sharp: best of its ${sharpRuns.length} rounds, one before each timed convd round`,
        `CPU time: convd ${seconds(matched.warm.serverCpuMs)} + this client ${seconds(matched.warm.clientCpuMs)} vs sharp ${seconds(baseline.clientCpuMs)}; cores kept busy: convd ${busy(matched.warm)} vs sharp ${busy(baseline)} of ${availableParallelism()}`,
        // Small images are converted inside the daemon (sharp on its libvips threads): what it spends beyond sharp's own work is the service's.
        `the service's own CPU per conversion (the daemon's - sharp's, per image; target at most ${SERVICE_CPU_TARGET_MS} ms): ${((matched.warm.serverCpuMs - baseline.clientCpuMs) / COUNT).toFixed(1)} ms`,
        dataDirNote,
        warmNote,
        ...(defaults === matched ? [] : [`not judged: convd at its default --workers ${defaults.workers} (one per core) took ${seconds(defaults.warm.ms)} = ${(defaults.warm.ms / baseline.ms).toFixed(2)}x, cores kept busy ${busy(defaults.warm)}`]),
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
