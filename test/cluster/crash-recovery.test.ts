/**
 * Crash safety of the real daemon: `kill -9` in the middle of work leaves store files that parse
 * and lose nothing; a restart on the same data dir brings every conversion to an end state; an
 * input that vanished while the daemon was down fails its conversion with a code; and a second
 * daemon never becomes a second writer of the same data dir.
 *
 * One suite, two stores (`npm run test:postgres` runs it with CONVD_TEST_STORE=postgres, see
 * test/helpers/daemon.ts): on PostgreSQL + S3 what the crash left is read from the daemon's
 * database instead of the store files (nothing of the state is on disk there), the vanished input
 * is an object removed from the bucket, and the restarted daemon, a new node of the shared
 * database, takes the dead one's running conversion over when its lease runs out rather than at
 * start: the checks wait for that, the same checks on both stores.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, it } from 'node:test';
import sharp from 'sharp';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { STATUSES } from '../../src/model/status.ts';
import { decodeCopy } from '../../src/store/durable-json-file.ts';
import { api, ROOT, startDaemon, TEST_STORE, type DaemonHandle } from '../helpers/daemon.ts';
import { HAS_SETPRIV } from '../helpers/engines-proc.ts';
import { mediaProcessesOf, meteredClient } from '../helpers/registry-pairs-daemon.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { ffmpegRun, mediaTools } from '../helpers/registry-pairs-fixtures.ts';
import { workFiles } from '../helpers/work-files.ts';

interface ConversionView {
  id: string;
  status: string;
  credits: number;
  error: { code: string; message: string } | null;
}

const IMAGE_SIZE = 1000;
const FAILURE_CODES = new Set(['input_invalid', 'fetch_failed', 'file_too_large', 'conversion_failed', 'timeout', 'memory_limit', 'interrupted', 'internal_error']);
const END = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/**
 * A 1000x1000 noisy PNG: WebP-encoding it takes sharp (one libvips thread) a quarter to half a
 * second, so with one worker a batch of 12 stays queued for seconds. (AVIF of noise takes ~20 s per image
 * here: far too slow for a test.)
 */
function noisyPng(): Promise<Buffer> {
  return sharp({ create: { width: IMAGE_SIZE, height: IMAGE_SIZE, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

async function submit(daemon: DaemonHandle, image: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.set('target', 'webp');
  form.set('file', new Blob([new Uint8Array(image)], { type: 'image/png' }), name);
  const answer = await api(daemon, '/conversions', { method: 'POST', body: form });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return (answer.body as ConversionView).id;
}

async function listAll(daemon: DaemonHandle): Promise<ConversionView[]> {
  const answer = await api(daemon, '/conversions?limit=100');
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body as { data: ConversionView[] }).data;
}

/** Work here waits behind noisy 1000 px encodes on one worker: longer than ops-support's default. */
const LONG_WAIT_MS = 60_000;

/**
 * PostgreSQL + S3: a restarted daemon is a new node of the shared database, and a conversion its
 * killed predecessor was running comes back when that node's lease runs out (the reaper), not at
 * start. 6 s instead of the default 30 keeps the tests short and still leaves a loaded machine
 * seconds to renew a live lease (every third of it). lowdb has no leases.
 */
const DAEMON_ARGS = TEST_STORE === 'postgres' ? ['--lease-timeout', '6s'] : [];

/** Waits until one conversion is processing while `queuedAtLeast` others still wait. */
function waitForMidWork(daemon: DaemonHandle, queuedAtLeast: number, succeededAtLeast = 0): Promise<string> {
  return waitUntil('a conversion in processing with work queued behind it', async () => {
    const list = await listAll(daemon);
    const processing = list.filter((c) => c.status === 'processing');
    const queued = list.filter((c) => c.status === 'queued').length;
    const succeeded = list.filter((c) => c.status === 'succeeded').length;
    return processing.length === 1 && queued >= queuedAtLeast && succeeded >= succeededAtLeast ? processing[0]!.id : undefined;
  }, LONG_WAIT_MS);
}

async function jsonFilesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.json')).map((e) => join(e.parentPath, e.name));
}

/**
 * Reads the store as it is on disk after the crash. Every store file has two copies, written in
 * turn (src/store/durable-json-file.ts): the copy a kill -9 tore may fail its checksum, the other
 * must be whole (an empty copy was never written). Returns the conversions of the newest whole
 * copy of each file.
 */
async function readStoreFromDisk(dataDir: string): Promise<{ files: number; conversions: ConversionRecord[] }> {
  const files = await jsonFilesUnder(join(dataDir, 'store'));
  const copies = new Map<string, { seq: number; data: unknown }[]>();
  for (const file of files) {
    const base = file.replace(/\.[ab]\.json$/, '');
    assert.notEqual(base, file, `${file}: not a copy of the store's layout`);
    const bytes = await readFile(file);
    // The daemon makes every copy empty at its first start: empty is "never written".
    if (bytes.length === 0) continue;
    const copy = decodeCopy(bytes);
    if (!copies.has(base)) copies.set(base, []);
    if (copy.valid) copies.get(base)!.push(copy);
  }
  const conversions: ConversionRecord[] = [];
  for (const [base, whole] of copies) {
    assert.ok(whole.length > 0, `${base}: no whole copy after kill -9`);
    const newest = whole.reduce((a, b) => (b.seq > a.seq ? b : a));
    const shard = newest.data as { conversions?: ConversionRecord[] };
    if (Array.isArray(shard.conversions)) conversions.push(...shard.conversions);
  }
  return { files: copies.size, conversions };
}

/**
 * The conversions as the store holds them after a kill -9. lowdb: read from the store files on
 * disk, which must parse (`files`: how many); PostgreSQL: read from the daemon's database, where
 * what was committed before the kill is all there is (`files`: null, nothing of it is on disk).
 */
async function storedAfterCrash(daemon: DaemonHandle): Promise<{ files: number | null; conversions: ConversionRecord[] }> {
  if (!daemon.databaseUrl) return readStoreFromDisk(daemon.dataDir);
  const { PostgresStore } = await import('../../src/store/postgres/postgres-store.ts');
  const store = await PostgresStore.open({ url: daemon.databaseUrl, poolSize: 1 });
  try {
    return { files: null, conversions: await store.conversionsWithStatus(STATUSES) };
  } finally {
    await store.close();
  }
}

/** Removes a conversion's input where the daemon keeps it: its data dir, or its prefix of the bucket. */
async function removeInput(daemon: DaemonHandle, id: string): Promise<void> {
  if (!daemon.stores) {
    await rm(join(daemon.dataDir, 'blobs', 'inputs', id));
    return;
  }
  const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
  const { bucket, prefix } = daemon.stores;
  const key = `${prefix}/inputs/${id}`;
  // S3 answers a DELETE of a missing key with success: checked first, as rm does on disk.
  assert.ok((await bucket.keys(`${prefix}/inputs/`)).includes(key), `${key} is in the bucket`);
  await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.bucket, Key: key }));
}

/** The inputs the daemon still keeps: the files of its data dir, or the objects of its prefix of the bucket (the `.keep` aside). */
async function inputsLeft(daemon: DaemonHandle): Promise<string[]> {
  if (!daemon.stores) return readdir(join(daemon.dataDir, 'blobs', 'inputs'));
  const { bucket, prefix } = daemon.stores;
  return (await bucket.keys(`${prefix}/inputs/`)).filter((key) => !key.endsWith('/.keep'));
}

function waitForAllEnded(daemon: DaemonHandle, ids: string[]): Promise<Map<string, ConversionView>> {
  return waitUntil('every conversion to reach an end state', async () => {
    const byId = new Map((await listAll(daemon)).map((c) => [c.id, c]));
    return ids.every((id) => END.has(byId.get(id)?.status ?? '')) ? byId : undefined;
  }, LONG_WAIT_MS);
}

async function assertWebpResult(daemon: DaemonHandle, id: string, size: { width: number; height: number } = { width: IMAGE_SIZE, height: IMAGE_SIZE }): Promise<void> {
  const response = await fetch(`${daemon.baseUrl}/conversions/${id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  assert.equal(response.status, 200, `download of ${id}`);
  const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
  assert.equal(meta.format, 'webp', `${id} is not a WebP`);
  assert.equal(meta.width, size.width);
  assert.equal(meta.height, size.height);
}

/** Live (not zombie) ffmpeg processes whose command line names `dir`: the converter of a data dir. */
async function ffmpegsNaming(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0');
      const state = (await readFile(`/proc/${entry}/stat`, 'utf8')).replace(/^.*\) /s, '')[0];
      // ffprobe runs first and names the data dir too: only ffmpeg itself counts.
      if (/(^|\/)ffmpeg$/.test(argv[0] ?? '') && argv.some((arg) => arg.includes(dir)) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return pids;
}

describe('crash recovery (kill -9 and restart)', () => {
  const daemons: DaemonHandle[] = [];
  afterEach(async () => {
    // Every handle of one data dir disposes the same dir; stopping all of them is harmless.
    for (const daemon of daemons.splice(0)) await daemon.dispose();
  });

  it('loses nothing: store files parse, and after restart every conversion succeeds', async () => {
    const image = await noisyPng();
    const first = await startDaemon({ args: ['--workers', '1', ...DAEMON_ARGS] });
    daemons.push(first);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await submit(first, image, `photo-${i}.png`));

    // Done, running and waiting work at once: one finished, one in the engine, most still queued.
    await waitForMidWork(first, 5, 1);
    // The listing reads the daemon's memory; its success reaches the disk with the next group
    // commit, which a busy box (CI's second Node) can hold for more than a moment.
    // (A copy read while it is being written may not parse: then the next look.)
    await waitUntil('a success on disk', async () => {
      const onDisk = await storedAfterCrash(first).catch(() => null);
      return onDisk?.conversions.some((c) => c.status === 'succeeded') ? true : undefined;
    });
    await sleep(50);
    await first.kill();

    const disk = await storedAfterCrash(first);
    if (disk.files !== null) assert.ok(disk.files >= 2, 'main.json and the conversion shards are there');
    const stored = new Map(disk.conversions.map((c) => [c.id, c]));
    // Every 202 was given only once its conversion was on disk: none may be missing.
    for (const id of ids) assert.ok(stored.has(id), `conversion ${id} lost by the crash`);
    const statuses = ids.map((id) => stored.get(id)!.status);
    assert.ok(statuses.includes('succeeded'), `statuses on disk: ${statuses.join(',')}`);
    assert.ok(statuses.includes('queued'), `statuses on disk: ${statuses.join(',')}`);
    // The start of the running one may not have reached lowdb's files yet (losing it changes
    // nothing: recovery re-queues active work), so it is stored as processing or still as queued.
    // With one worker, at most one more is processing: the pool gives the worker to the next
    // conversion once an engine has ended, while that conversion's result is still being stored
    // (src/queue/worker-pool.ts, `releaseSlot`): a rename on lowdb, rarely met by the kill; an
    // upload into the bucket on S3, often met.
    const processing = ids.filter((id) => stored.get(id)!.status === 'processing');
    assert.ok(processing.length <= 2, `statuses on disk: ${statuses.join(',')}`);

    const second = await first.restart();
    daemons.push(second);
    const ended = await waitForAllEnded(second, ids);
    for (const id of ids) {
      const conversion = ended.get(id)!;
      assert.equal(conversion.status, 'succeeded', `${id}: ${JSON.stringify(conversion.error)}`);
      await assertWebpResult(second, id);
    }
    for (const interrupted of processing) {
      assert.match(second.stderr(), new RegExp(`"event":"conversion.requeued","id":"${interrupted}"`), `the interrupted conversion ${interrupted} was re-queued`);
    }
    // Nothing extra appeared and nothing was run twice into a second record.
    assert.equal((await listAll(second)).length, ids.length);
    // Inputs are dropped once their conversion's end is on disk (a moment after the listing shows
    // it, from a bucket or the data dir alike: waited for); scratch of the killed run is cleared.
    const blobs = join(second.dataDir, 'blobs');
    await waitUntil('the inputs gone with their ends', async () => ((await inputsLeft(second)).length === 0 ? true : undefined), 10_000);
    assert.deepEqual(await inputsLeft(second), []);
    assert.deepEqual(await readdir(join(blobs, 'spool')), []);
    assert.deepEqual(await workFiles(second.dataDir), []);
  });

  it('loses no small upload kept in its record (no input file): each runs after the restart, and the bytes go with its end', async () => {
    const first = await startDaemon({ args: ['--workers', '1', ...DAEMON_ARGS] });
    daemons.push(first);
    // A large image holds the one worker; the small ones wait behind it, their bytes in their records.
    const ids = [await submit(first, await noisyPng(), 'large.png')];
    const small = await sharp({ create: { width: 48, height: 32, channels: 3, background: '#2060a0' } }).png().toBuffer();
    for (let i = 0; i < 4; i++) ids.push(await submit(first, small, `icon-${i}.png`));
    await waitForMidWork(first, 3);
    await first.kill();

    const stored = new Map((await storedAfterCrash(first)).conversions.map((c) => [c.id, c]));
    const waiting = ids.slice(1).filter((id) => stored.get(id)?.status === 'queued');
    assert.ok(waiting.length >= 3, `statuses on disk: ${ids.map((id) => stored.get(id)?.status).join(',')}`);
    for (const id of waiting) assert.equal(Buffer.from(stored.get(id)!.input_bytes ?? '', 'base64').compare(small), 0, `${id} keeps its upload in its record`);
    assert.equal(stored.get(ids[0]!)!.input_bytes, undefined, 'a large upload is a file of its own');
    const files = await inputsLeft(first);
    for (const id of waiting) assert.ok(!files.some((name) => name.endsWith(id)), `no input file for ${id}`);

    const second = await first.restart();
    daemons.push(second);
    const ended = await waitForAllEnded(second, ids);
    for (const [index, id] of ids.entries()) {
      assert.equal(ended.get(id)!.status, 'succeeded', `${id}: ${JSON.stringify(ended.get(id)!.error)}`);
      await assertWebpResult(second, id, index === 0 ? undefined : { width: 48, height: 32 });
    }
    await second.stop();
    const after = new Map((await storedAfterCrash(second)).conversions.map((c) => [c.id, c]));
    for (const id of ids) assert.equal(after.get(id)?.input_bytes, undefined, `${id} ended without its bytes`);
  });

  it('fails an interrupted conversion with a code when its input vanished while the daemon was down', async () => {
    const image = await noisyPng();
    const first = await startDaemon({ args: ['--workers', '1', ...DAEMON_ARGS] });
    daemons.push(first);
    const ids = [await submit(first, image, 'a.png'), await submit(first, image, 'b.png'), await submit(first, image, 'c.png')];
    await waitForMidWork(first, 1);
    await sleep(50);
    await first.kill();

    const disk = await storedAfterCrash(first);
    const processing = disk.conversions.filter((c) => c.status === 'processing');
    // One in its engine, and perhaps the one before it storing its result (see the test above):
    // either is a conversion the crash interrupted.
    assert.ok(processing.length >= 1 && processing.length <= 2, `${processing.length} conversions were processing when the daemon died`);
    const lost = processing[0]!.id;
    await removeInput(first, lost);

    const second = await first.restart();
    daemons.push(second);
    const ended = await waitForAllEnded(second, ids);
    const failed = ended.get(lost)!;
    assert.equal(failed.status, 'failed');
    assert.ok(failed.error && FAILURE_CODES.has(failed.error.code), `error: ${JSON.stringify(failed.error)}`);
    assert.ok(failed.error.message.length > 0);
    assert.equal(failed.credits, 0);
    for (const id of ids.filter((id) => id !== lost)) {
      assert.equal(ended.get(id)!.status, 'succeeded', `${id}: ${JSON.stringify(ended.get(id)!.error)}`);
      await assertWebpResult(second, id);
    }
  });

  it('takes its ffmpeg down with it: no converter keeps writing into the data dir after kill -9', async (t) => {
    // The kernel does it (a parent-death signal, set by util-linux's setpriv): no handler runs on SIGKILL.
    if (!HAS_SETPRIV) {
      t.skip('needs Linux with util-linux setpriv');
      return;
    }
    const videoDir = await mkdtemp(join(tmpdir(), 'convd-crash-video-'));
    let dataDir: string | null = null;
    try {
      // 30 s of 640x360 into VP9 takes ffmpeg many seconds here: it is mid-run when the daemon dies.
      const video = join(videoDir, 'long.mp4');
      await ffmpegRun(await mediaTools(), ['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25', '-t', '30', '-c:v', 'libx264', '-preset', 'ultrafast', video]);
      const daemon = await startDaemon();
      daemons.push(daemon);
      dataDir = daemon.dataDir;
      const form = new FormData();
      form.set('target', 'webm');
      form.set('file', new Blob([new Uint8Array(await readFile(video))], { type: 'video/mp4' }), 'long.mp4');
      const answer = await api(daemon, '/conversions', { method: 'POST', body: form });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      const id = (answer.body as ConversionView).id;
      // ffmpeg has reported progress: it runs, past its start.
      await waitUntil('the conversion to make progress', async () => {
        const view = (await api(daemon, `/conversions/${id}`)).body as { progress: number | null };
        return (view.progress ?? 0) > 0 ? true : undefined;
      }, LONG_WAIT_MS);
      const converters = await ffmpegsNaming(daemon.dataDir);
      assert.equal(converters.length, 1, 'one ffmpeg converting in the data dir');
      await daemon.kill();
      await waitUntil('the converter to end with its daemon', async () => {
        const left = (await ffmpegsNaming(daemon.dataDir)).filter((pid) => converters.includes(pid));
        return left.length === 0 ? true : undefined;
      }, 5_000);
    } finally {
      // A failure leaves no converter behind (looked up again: never a pid that may be reused).
      for (const pid of dataDir ? await ffmpegsNaming(dataDir) : []) process.kill(pid, 'SIGKILL');
      await rm(videoDir, { recursive: true, force: true });
    }
  });

  it('no crash loop: a conversion the daemon dies running twice (at once, as its engine starts) fails `interrupted` after its one retry, and costs nothing', async () => {
    const videoDir = await mkdtemp(join(tmpdir(), 'convd-crash-loop-'));
    try {
      // Many seconds of VP9 for ffmpeg: it is mid-run each time the daemon dies.
      const video = join(videoDir, 'long.mp4');
      await ffmpegRun(await mediaTools(), ['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25', '-t', '30', '-c:v', 'libx264', '-preset', 'ultrafast', video]);
      const first = await startDaemon({ args: DAEMON_ARGS });
      daemons.push(first);
      // A metered account: a failure must release its reservation, which an unmetered one never holds.
      const client = await meteredClient(first, 'pro');
      const credits = async (daemon: DaemonHandle) => ((await api(daemon, '/account', { key: client.apiKey })).body as { credits: { remaining: number } }).credits.remaining;
      const before = await credits(first);
      const form = new FormData();
      form.set('target', 'webm');
      form.set('file', new Blob([new Uint8Array(await readFile(video))], { type: 'video/mp4' }), 'long.mp4');
      const answer = await api(first, '/conversions', { method: 'POST', body: form, key: client.apiKey });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      const id = (answer.body as ConversionView).id;
      // The daemon dies as soon as the engine runs (its first process, ffprobe, has started: a few
      // ms into the conversion, before any deferred write of the store would reach the disk).
      const running = (daemon: DaemonHandle) => waitUntil('the media engine to run the conversion', () => (
        mediaProcessesOf(daemon.process.pid!).some((p) => p.state !== 'Z') ? true : undefined
      ), LONG_WAIT_MS);

      // Found running after a restart: on lowdb at once (its recovery at start), on PostgreSQL when
      // the dead node's lease runs out (the new node's reaper). Waited for, then checked alike.
      const requeued = new RegExp(`"event":"conversion.requeued","id":"${id}","interruptions":1`);
      /** The conversion once the restarted daemon has decided what becomes of it (it is no longer the dead one's `processing`). */
      const takenBack = (daemon: DaemonHandle) => waitUntil('the interrupted conversion to be taken back', async () => {
        const view = (await api(daemon, `/conversions/${id}`, { key: client.apiKey })).body as ConversionView;
        return view.status === 'processing' ? undefined : view;
      }, LONG_WAIT_MS);

      await running(first);
      await first.kill();
      const second = await first.restart();
      daemons.push(second);
      await waitUntil('the interrupted conversion to be taken back', () => (requeued.test(second.stderr()) ? true : undefined), LONG_WAIT_MS);
      assert.equal(second.stderr().split('\n').filter((line) => requeued.test(line)).length, 1, 'retried once, not more');
      await running(second);
      await second.kill();

      const third = await second.restart();
      daemons.push(third);
      const view = await takenBack(third);
      assert.equal(view.status, 'failed', 'not run a third time');
      assert.equal(view.error?.code, 'interrupted');
      assert.match(view.error!.message, /stopped unexpectedly/);
      assert.equal(view.credits, 0);
      assert.equal(await credits(third), before, 'its reservation was released');
      assert.deepEqual(await ffmpegsNaming(third.dataDir), [], 'nothing converts it any more');
      // The daemon serves: a new conversion succeeds.
      const image = await submit(third, await noisyPng(), 'after.png');
      const ended = await waitForAllEnded(third, [image]);
      assert.equal(ended.get(image)!.status, 'succeeded');
      await assertWebpResult(third, image);
    } finally {
      await rm(videoDir, { recursive: true, force: true });
    }
  });

  it('refuses a second daemon on the same data dir while the first runs', async () => {
    const first = await startDaemon();
    daemons.push(first);
    // The very daemon again: on PostgreSQL + S3 with the same database and bucket too.
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'daemon', 'main.ts'), 'serve', '--port', '0', '--data-dir', first.dataDir, ...(first.stores?.args ?? [])], {
      cwd: ROOT,
      env: { ...process.env, ...first.stores?.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    assert.notEqual(code, 0, `the second daemon must not run: ${stderr}`);
    assert.match(stderr, new RegExp(`pid ${first.process.pid}\\b`), `the refusal names the owner: ${stderr}`);
    assert.doesNotMatch(stderr, /listening on/);
    // The first daemon is untouched and still owns the directory.
    assert.equal((await api(first, '/account')).status, 200);
    assert.equal((await readFile(join(first.dataDir, 'convd.lock'), 'utf8')).trim(), String(first.process.pid));
  });
});
