/**
 * cluster-nodes: 200 PNG -> WebP spread over two convd nodes on one PostgreSQL database and one S3
 * bucket, against the same 200 on one node on PostgreSQL and S3. It reports the ratio (on a 2-core
 * box near 1x is expected) and where the time goes.
 *
 * Each side has a database of its own (bench/lib/postgres.ts) and a prefix of its own in one
 * bucket (s3rver in a process of its own: bench/lib/s3.ts), and one unmetered account seeded in
 * its database. One node: the compiled daemon at its default workers (one per core). Two nodes:
 * two such daemons on the same database and prefix, every request (submission and download alike)
 * sent to the next node in turn, as a load balancer's round robin. The same 200 photo-like
 * 1000x750 PNGs (0.8 MiB on average; the engine's work, about 50 ms of CPU an image on the 2-core
 * development box, is half of what a conversion costs) go through each side, 8 in flight, each a
 * multipart submission with `wait` and then its download; every output is decoded (WebP,
 * 1000x750). Rounds alternate (one node, two nodes, files on disk; twice, after one untimed
 * round each) and the best of each side is kept.
 *
 * Where the time goes, measured rather than guessed:
 *   - each conversion's created/started/finished times from the API's answer, beside the client's
 *     own clock (same machine): the upload to the node, the input into the bucket plus the wait in
 *     the queue, the run (input down from the bucket, engine, result up), the answer to `wait`,
 *     the download;
 *   - the engine alone: the same sharp pipeline as convd's engine, file to file, on the same
 *     images with as many at once as one node's workers, in this process;
 *   - CPU time over each round (/proc/<pid>/stat): the daemons, s3rver, the PostgreSQL server
 *     processes of the side's database (and the server's background writers), this client, and
 *     the whole machine (/proc/stat), so that what other processes took is visible;
 *   - a third, unjudged side: one node on PostgreSQL with its files on its data dir (no bucket),
 *     which shows what the bucket costs.
 *
 * Target: every output valid, and two nodes within [0.5x, 1.5x] of one node's time. On one
 * machine the nodes share its cores: one node at its default already runs a conversion per core,
 * so a second one adds workers but no cores (near 1x expected), and more than 1.5x would mean the
 * cluster's own path (claims, wake-ups, cross-node `wait`, the shared bucket) costs a large part
 * of an image's conversion. Below 0.5x is impossible with twice the workers on the same cores: it
 * would mean the one-node side measured something other than conversions.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartFrame } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { photoPng } from './lib/images.ts';
import { ADMIN_DATABASE_URL, createBenchDatabase, seedPostgresAccounts, type BenchDatabase } from './lib/postgres.ts';
import { freshDir, removeDir, tempDir } from './lib/processes.ts';
import { S3_ENV, startBenchBucket, type BenchBucket } from './lib/s3.ts';
import type { BenchResult } from './types.ts';

const COUNT = 200;
const WIDTH = 1000;
const HEIGHT = 750;
/** Requests in flight (each lane: submit with wait, then download). */
const PARALLEL = 8;
/** The API's longest wait (create-request.ts); a conversion not ended by then is polled. */
const WAIT_SECONDS = 30;
const ROUNDS = 2;
/** One untimed round per side first: JIT, pools, s3rver's and PostgreSQL's caches. */
const WARMUP_ROUNDS = 1;
const MAX_RATIO = 1.5;
const MIN_RATIO = 0.5;
/** USER_HZ of /proc/stat, as bench/lib/cpu.ts. */
const TICKS_PER_SECOND = 100;

type SideKey = 'one' | 'two' | 'disk';

interface Side {
  key: SideKey;
  label: string;
  database: BenchDatabase;
  nodes: BenchDaemon[];
  /** One keep-alive connection per lane and node: connections[node][lane]. */
  connections: WireConnection[][];
  usesBucket: boolean;
}

/** One conversion's times, in ms of the epoch (the client's Date.now(), the API's timestamps). */
interface Timing {
  sent: number;
  created: number;
  started: number;
  finished: number;
  answered: number;
  downloaded: number;
}

interface Cpu {
  daemons: number;
  s3: number;
  /** The side database's server processes (backends, autovacuum). */
  postgres: number;
  /** walwriter, checkpointer, background writer: the server's, shared with any other database on it. */
  postgresBackground: number;
  client: number;
  /** Every process of the machine (/proc/stat). */
  machine: number;
}

interface Round {
  side: SideKey;
  ms: number;
  timings: Timing[];
  cpu: Cpu;
  polled: number;
  problem: string | null;
}

async function machineBusyMs(): Promise<number> {
  const first = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
  // cpu user nice system idle iowait irq softirq steal ...
  const [user, nice, system, , , irq, softirq, steal] = first.trim().split(/\s+/).slice(1).map(Number);
  return ((user! + nice! + system! + irq! + softirq! + (steal ?? 0)) * 1000) / TICKS_PER_SECOND;
}

const BACKGROUND = ['walwriter', 'checkpointer', 'background writer'];

/** CPU so far of the server processes of `database` and of the server's background writers, by pid. */
async function postgresCpu(monitor: pg.Client | null, database: string): Promise<{ own: Map<number, number>; background: Map<number, number> }> {
  const own = new Map<number, number>();
  const background = new Map<number, number>();
  if (!monitor) return { own, background };
  const { rows } = await monitor.query<{ pid: number; datname: string | null; backend_type: string }>(
    'SELECT pid, datname, backend_type FROM pg_stat_activity WHERE datname = $1 OR backend_type = ANY($2)',
    [database, BACKGROUND],
  );
  for (const row of rows) {
    const ms = await cpuTimeMs(row.pid).catch(() => null);
    if (ms === null) continue;
    (row.datname === database ? own : background).set(row.pid, ms);
  }
  return { own, background };
}

/** What a map of CPU by pid grew by; a process that started in between counts from its start. */
function grown(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}

async function sum(pids: number[]): Promise<number> {
  let total = 0;
  for (const pid of pids) total += await cpuTimeMs(pid);
  return total;
}

interface Snapshot {
  daemons: number;
  s3: number;
  postgres: Awaited<ReturnType<typeof postgresCpu>>;
  client: NodeJS.CpuUsage;
  machine: number;
}

async function snapshot(side: Side, bucket: BenchBucket, monitor: pg.Client | null): Promise<Snapshot> {
  return {
    daemons: await sum(side.nodes.map((node) => node.pid)),
    s3: await cpuTimeMs(bucket.pid),
    postgres: await postgresCpu(monitor, side.database.name),
    client: process.cpuUsage(),
    machine: await machineBusyMs(),
  };
}

async function cpuSince(before: Snapshot, side: Side, bucket: BenchBucket, monitor: pg.Client | null): Promise<Cpu> {
  const client = process.cpuUsage(before.client);
  const after = await snapshot(side, bucket, monitor);
  return {
    daemons: after.daemons - before.daemons,
    s3: after.s3 - before.s3,
    postgres: grown(before.postgres.own, after.postgres.own),
    postgresBackground: grown(before.postgres.background, after.postgres.background),
    client: (client.user + client.system) / 1000,
    machine: after.machine - before.machine,
  };
}

/** `parallel` lanes taking the next item in turn. */
async function inParallel(count: number, parallel: number, work: (index: number, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async (_, lane) => {
    while (next < count) await work(next++, lane);
  }));
}

interface PublicConversion {
  id: string;
  status: string;
  error: unknown;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** Runs the 200 through `side`, each request to the side's next node; outputs checked after the clock stops. */
async function runRound(side: Side, inputs: Buffer[], bucket: BenchBucket, monitor: pg.Client | null): Promise<Round> {
  let turn = 0;
  const nextNode = () => turn++ % side.nodes.length;
  const outputs: Buffer[] = new Array(inputs.length);
  const timings: Timing[] = new Array(inputs.length);
  let polled = 0;
  const convert = async (index: number, lane: number) => {
    const node = nextNode();
    const daemon = side.nodes[node]!;
    const auth = { authorization: `Bearer ${daemon.apiKey}` };
    const name = `photo-${index}.png`;
    const frame = multipartFrame({ target: 'webp', wait: String(WAIT_SECONDS) }, name, 'image/png');
    const body = Buffer.concat([frame.head, inputs[index]!, frame.tail]);
    const sent = Date.now();
    const created = await side.connections[node]![lane]!.request('POST', '/v1/conversions', { ...auth, 'content-type': frame.contentType }, body);
    let conversion = json<PublicConversion>(created);
    if (created.status !== 200 && created.status !== 202) throw new Error(`${side.label}: ${name} answered ${created.status} ${created.body.toString().slice(0, 300)}`);
    // Not ended within the API's longest wait (a very disturbed machine): asked again, on the next node.
    while (!ENDED.has(conversion.status)) {
      polled++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      const asked = nextNode();
      conversion = json<PublicConversion>(await side.connections[asked]![lane]!.request('GET', `/v1/conversions/${conversion.id}`, auth));
    }
    const answered = Date.now();
    if (conversion.status !== 'succeeded') throw new Error(`${side.label}: ${name} ended ${conversion.status} ${JSON.stringify(conversion.error)}`);
    const download = await side.connections[nextNode()]![lane]!.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
    if (download.status !== 200) throw new Error(`${side.label}: ${name} download answered ${download.status}`);
    outputs[index] = download.body;
    timings[index] = {
      sent, answered, downloaded: Date.now(),
      created: Date.parse(conversion.created_at), started: Date.parse(conversion.started_at!), finished: Date.parse(conversion.finished_at!),
    };
  };
  const before = await snapshot(side, bucket, monitor);
  const started = performance.now();
  await inParallel(inputs.length, PARALLEL, convert);
  const ms = performance.now() - started;
  const cpu = await cpuSince(before, side, bucket, monitor);
  return { side: side.key, ms, timings, cpu, polled, problem: await checkWebp(outputs) };
}

async function checkWebp(outputs: Buffer[]): Promise<string | null> {
  for (const [index, output] of outputs.entries()) {
    const meta = await sharp(output).metadata().catch((error: unknown) => ({ format: `undecodable (${String(error)})`, width: 0, height: 0 }));
    if (meta.format !== 'webp' || meta.width !== WIDTH || meta.height !== HEIGHT) return `output ${index} is ${meta.format} ${meta.width}x${meta.height}`;
  }
  return null;
}

interface Phases {
  toNode: number;
  bucketAndQueue: number;
  run: number;
  answer: number;
  download: number;
  total: number;
}

function phases(timings: Timing[]): Phases {
  const mean = (pick: (t: Timing) => number) => timings.reduce((s, t) => s + pick(t), 0) / timings.length;
  return {
    toNode: mean((t) => t.created - t.sent),
    bucketAndQueue: mean((t) => t.started - t.created),
    run: mean((t) => t.finished - t.started),
    answer: mean((t) => t.answered - t.finished),
    download: mean((t) => t.downloaded - t.answered),
    total: mean((t) => t.downloaded - t.sent),
  };
}

/** Conversions each node ran and their summed run time, from its /metrics (convd_conversion_duration_seconds). */
async function ranOn(daemon: BenchDaemon): Promise<{ count: number; seconds: number }> {
  // Unreadable (a metrics token or listener set in the environment): not counted, not fatal.
  const text = await fetch(`${daemon.url}/metrics`).then((answer) => (answer.ok ? answer.text() : '')).catch(() => '');
  let count = 0;
  let seconds = 0;
  for (const match of text.matchAll(/^convd_conversion_duration_seconds_(count|sum)\{[^}]*status="succeeded"[^}]*\} (\S+)$/gm)) {
    if (match[1] === 'count') count += Number(match[2]);
    else seconds += Number(match[2]);
  }
  return { count, seconds };
}

/** The engine's own pipeline (src/engines/image/sharp-engine.ts for png -> webp), file to file, `atOnce` at a time. */
async function engineAlone(inputDir: string, outputDir: string, atOnce: number): Promise<{ ms: number; perImageMs: number; cpuMs: number }> {
  await freshDir(outputDir);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let busy = 0;
  await inParallel(COUNT, atOnce, async (index) => {
    const one = performance.now();
    await sharp(join(inputDir, `photo-${index}.png`), { failOn: 'error', sequentialRead: true }).webp({ quality: 80 }).toFile(join(outputDir, `photo-${index}.webp`));
    busy += performance.now() - one;
  });
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { ms, perImageMs: busy / COUNT, cpuMs: (cpu.user + cpu.system) / 1000 };
}

function best(rounds: Round[]): Round {
  return rounds.reduce((a, b) => (b.ms < a.ms ? b : a));
}

export async function benchClusterNodes(): Promise<BenchResult> {
  const cores = availableParallelism();
  const dir = await tempDir('cluster');
  const databases: BenchDatabase[] = [];
  const sides: Side[] = [];
  let bucket: BenchBucket | null = null;
  let monitor: pg.Client | null = null;
  try {
    const inputs = await Promise.all(Array.from({ length: COUNT }, (_, i) => photoPng(WIDTH, HEIGHT, i + 1)));
    const inputDir = join(dir, 'in');
    await mkdir(inputDir);
    await Promise.all(inputs.map((png, i) => writeFile(join(inputDir, `photo-${i}.png`), png)));
    const averageKib = inputs.reduce((s, png) => s + png.length, 0) / inputs.length / 1024;

    bucket = await startBenchBucket(['one', 'two']);
    const makeSide = async (key: SideKey, label: string, nodeCount: number, blobUrl: string | null): Promise<Side> => {
      const database = await createBenchDatabase();
      databases.push(database);
      const [account] = await seedPostgresAccounts(database.url, ['unmetered']);
      const side: Side = { key, label, database, nodes: [], connections: [], usesBucket: blobUrl !== null };
      sides.push(side);
      for (let n = 0; n < nodeCount; n++) {
        const node = await startBenchDaemon({
          dataDir: join(dir, `${key}-${n}`),
          apiKey: account!.apiKey,
          args: ['--database-url', database.url, ...(blobUrl ? ['--blob-url', blobUrl] : [])],
          // The bench's stores whatever the shell's environment names.
          env: { ...S3_ENV, CONVD_DATABASE_URL: undefined, CONVD_BLOB_URL: undefined, CONVD_WORKERS: undefined },
        });
        side.nodes.push(node);
        side.connections.push(Array.from({ length: PARALLEL }, () => new WireConnection(node.host, node.port)));
      }
      return side;
    };
    const one = await makeSide('one', '1 node', 1, bucket.blobUrls[0]!);
    const two = await makeSide('two', '2 nodes', 2, bucket.blobUrls[1]!);
    const disk = await makeSide('disk', '1 node, files on disk', 1, null);

    const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(ADMIN_DATABASE_URL).hostname);
    if (local) {
      monitor = new pg.Client({ connectionString: ADMIN_DATABASE_URL, application_name: 'convd-bench' });
      monitor.on('error', () => undefined);
      await monitor.connect();
    }

    const order = [one, two, disk];
    const warmups: Round[] = [];
    for (let r = 0; r < WARMUP_ROUNDS; r++) for (const side of order) warmups.push(await runRound(side, inputs, bucket, monitor));
    const rounds: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) for (const side of order) rounds.push(await runRound(side, inputs, bucket, monitor));
    const spread = await Promise.all(two.nodes.map(ranOn));
    const alone = await engineAlone(inputDir, join(dir, 'out'), cores);

    const notes = [...warmups, ...rounds].flatMap((round) => (round.problem ? [`INVALID: ${round.side} ${round.problem}`] : []));
    const polled = [...warmups, ...rounds].reduce((s, round) => s + round.polled, 0);
    const bestOf = (side: Side) => best(rounds.filter((round) => round.side === side.key));
    const [a, b, l] = [bestOf(one), bestOf(two), bestOf(disk)];
    const ratio = b.ms / a.ms;
    const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const rate = (round: Round) => (COUNT / (round.ms / 1000)).toFixed(1);
    const ms = (value: number) => value.toFixed(0);
    const per = (value: number) => (value / COUNT).toFixed(1);
    const describePhases = (label: string, round: Round) => {
      const p = phases(round.timings);
      return `${label}: to the node ${ms(p.toNode)}, into the ${round.side === 'disk' ? 'data dir' : 'bucket'} + queue wait ${ms(p.bucketAndQueue)}, run ${ms(p.run)}, answer to wait ${ms(p.answer)}, download ${ms(p.download)} (submit to downloaded ${ms(p.total)})`;
    };
    const ours = (cpu: Cpu) => cpu.daemons + cpu.s3 + cpu.postgres + cpu.postgresBackground + cpu.client;
    const describeCpu = (label: string, round: Round) => {
      const c = round.cpu;
      const pgPart = monitor ? ` + PostgreSQL ${per(c.postgres)} (+ its background writers ${per(c.postgresBackground)})` : '';
      const s3Part = round.side === 'disk' ? '' : ` + s3rver ${per(c.s3)}`;
      return `${label}: daemon${round.side === 'two' ? 's' : ''} ${per(c.daemons)}${s3Part}${pgPart} + client ${per(c.client)} = ${per(ours(c))} ms; `
        + `cores busy: these ${(ours(c) / round.ms).toFixed(2)}, whole machine ${(c.machine / round.ms).toFixed(2)} of ${cores}`;
    };
    const engineCpu = alone.cpuMs / COUNT;
    const aCpu = ours(a.cpu) / COUNT;
    // What the bucket costs in CPU: s3rver plus what the daemon spends beyond the same node with files on disk.
    const bucketCpu = (a.cpu.s3 + a.cpu.daemons - l.cpu.daemons) / COUNT;
    const postgresCpuPer = (a.cpu.postgres + a.cpu.postgresBackground) / COUNT;
    const others = Math.max(...rounds.map((round) => (round.cpu.machine - ours(round.cpu)) / round.ms));
    const pass = notes.length === 0 && ratio <= MAX_RATIO && ratio >= MIN_RATIO;
    return {
      title: `${COUNT} PNG -> WebP over 2 nodes`,
      figures: `2 nodes ${seconds(b.ms)} (${rate(b)}/s) vs 1 node ${seconds(a.ms)} (${rate(a)}/s), both on PostgreSQL + S3`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `${MIN_RATIO}x-${MAX_RATIO}x of 1 node's time (one machine: ~1x expected), every output valid`,
      pass,
      notes: [
        `${WIDTH}x${HEIGHT} photo-like PNGs (${averageKib.toFixed(0)} KiB average) -> WebP, ${PARALLEL} in flight, multipart submit with wait=${WAIT_SECONDS} then download, each request to the side's next node; `
          + `--workers ${cores} (the default) per node; a database of its own per side, one s3rver (a process of its own) with a prefix per side; best of ${ROUNDS} alternating rounds after ${WARMUP_ROUNDS} untimed per side`,
        `per conversion, mean ms in the best rounds; ${describePhases('1 node', a)}`,
        describePhases('2 nodes', b),
        `${describePhases('1 node, files on disk', l)}; not judged: ${seconds(l.ms)} = ${(l.ms / a.ms).toFixed(2)}x of the node on the bucket`,
        `engine alone (convd's sharp pipeline, file to file, the same images, ${cores} at once, in this process): ${alone.perImageMs.toFixed(1)} ms an image, ${seconds(alone.ms)} for the ${COUNT}, CPU ${engineCpu.toFixed(1)} ms an image`,
        `CPU per conversion, ms; ${describeCpu('1 node', a)}`,
        describeCpu('2 nodes', b),
        describeCpu('1 node, files on disk', l),
        `2 nodes over all rounds: ${spread.map((s, i) => `node ${i + 1} ran ${s.count} (run ${s.count > 0 ? ((s.seconds * 1000) / s.count).toFixed(0) : '-'} ms mean)`).join(', ')}`,
        `where the time goes (1 node, CPU): engine ${engineCpu.toFixed(1)} of ${aCpu.toFixed(1)} ms (${((engineCpu / aCpu) * 100).toFixed(0)} %), the bucket ${bucketCpu.toFixed(1)} ms (s3rver + the daemon's CPU beyond files on disk; ${((bucketCpu / aCpu) * 100).toFixed(0)} %)`
          + `${monitor ? `, PostgreSQL ${postgresCpuPer.toFixed(1)} ms (${((postgresCpuPer / aCpu) * 100).toFixed(0)} %)` : ''}, this client ${per(a.cpu.client)} ms; `
          + `with ${cores} cores busy, ${COUNT} conversions need at least ${seconds((aCpu * COUNT) / cores)}: a second node on the same cores adds workers, not cores`,
        ...(others > 0.25 ? [`other processes on the machine took up to ${others.toFixed(2)} cores during a timed round: figures disturbed`] : []),
        ...(polled > 0 ? [`${polled} answers to wait came before the end (a conversion over ${WAIT_SECONDS} s in the queue): polled`] : []),
        ...(monitor ? [] : ['PostgreSQL is not on this machine: its CPU is not counted']),
        ...notes,
      ],
    };
  } finally {
    await monitor?.end().catch(() => undefined);
    for (const side of sides) {
      for (const lane of side.connections.flat()) lane.close();
      for (const node of side.nodes) await node.stop();
    }
    await bucket?.stop();
    for (const database of databases) await database.drop();
    await removeDir(dir);
  }
}
