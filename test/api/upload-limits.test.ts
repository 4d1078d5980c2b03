/**
 * Limits before the body, over real HTTP, with clients that misbehave on raw sockets: an upload
 * is checked against the account's concurrency (uploads in flight count), its credits (estimated
 * from Content-Length) and the disk floor before a byte of its file is read; a body that stalls,
 * or takes too long as a whole, is ended with 408 request_timeout, its spool file removed and the
 * connection closed; an upload that would take free space below the floor is cut mid-body with
 * 503 low_disk_space and leaves nothing. The disk cases run on a 64 MiB tmpfs the test mounts
 * (root only; skipped otherwise).
 */
import assert from 'node:assert/strict';
import { readdir, readFile, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertError, getAccount, newAccountWithCli, png, spoolFiles, submitFile, submitJson, type Client,
} from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { BOUNDARY, multipartHead, RawRequest, type RawAnswer } from '../helpers/raw-upload.ts';
import { smallDisk } from '../helpers/small-disk.ts';
import { workFiles } from '../helpers/work-files.ts';

const MIB = 1024 * 1024;
/** The daemon's upload_idle_timeout and request_timeout here, through their variables. */
const IDLE_MS = 1500;
const TOTAL_MS = 3000;
/** The disk floor of the daemon on the 64 MiB tmpfs. */
const FLOOR_MB = 32;
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

const disk = await smallDisk(64);

function assertRawError(answer: RawAnswer, status: number, code: string) {
  return assertError({ status: answer.status, headers: new Headers(answer.headers), body: answer.json }, status, code);
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let daemon: DaemonHandle;
let small: DaemonHandle | null = null;
let image: Buffer;
let accounts: { concurrency: Client; stall: Client; liteOne: Client; diskA: Client | null; diskB: Client | null };

before(async () => {
  [daemon, small, image] = await Promise.all([
    startDaemon({ env: { CONVD_UPLOAD_IDLE_TIMEOUT: `${IDLE_MS}ms`, CONVD_REQUEST_TIMEOUT: `${TOTAL_MS}ms` } }),
    disk.dir ? startDaemon({ dataDir: disk.dir, env: { CONVD_DISK_FLOOR_MB: String(FLOOR_MB) } }) : Promise.resolve(null),
    png(20, 20),
  ]);
  // Through `convd accounts create` and `convd keys create`, as an operator makes them.
  const onSmall = small;
  const [[concurrency, stall, liteOne], onDisk] = await Promise.all([
    Promise.all([newAccountWithCli(daemon, 'free'), newAccountWithCli(daemon, 'free'), newAccountWithCli(daemon, 'lite', { credits: 1 })]),
    onSmall ? Promise.all([newAccountWithCli(onSmall, 'free'), newAccountWithCli(onSmall, 'free')]) : Promise.resolve(null),
  ]);
  accounts = { concurrency, stall, liteOne, diskA: onDisk?.[0] ?? null, diskB: onDisk?.[1] ?? null };
});

after(async () => {
  await daemon?.dispose();
  if (disk.dir) {
    // Not dispose(): the mount point itself cannot be removed while mounted.
    await small?.kill();
    await disk.remove();
  }
});

describe('limits checked before the body', () => {
  it('a free account with two uploads in flight: a third is 429 concurrency_limit at once, before it sent its file', async () => {
    const free = accounts.concurrency;
    assert.equal((await getAccount(free)).body.limits.concurrent_conversions, 2);
    const headers = { 'content-type': MULTIPART, 'content-length': String(4 * MIB) };
    const inFlight = [await RawRequest.post(free, headers), await RawRequest.post(free, headers)];
    for (const upload of inFlight) {
      await upload.write(multipartHead({ target: 'webp' }, 'slow.png'));
      // Past the first 64 KiB, which an upload holds in memory: from there on its spool file is there to see.
      await upload.write(Buffer.alloc(96 * 1024, 1));
    }
    // Both passed their pre-check: their files are being spooled.
    await waitFor(async () => (await spoolFiles(daemon.dataDir)).length === 2, 5000, 'two uploads spooling');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Slow, never silent: they stay in flight whatever the idle limit.
    const trickles = inFlight.map((upload) => upload.trickle(250, released));
    try {
      const started = performance.now();
      const third = await RawRequest.post(free, headers);
      const answer = await third.answer;
      const error = assertRawError(answer, 429, 'concurrency_limit');
      assert.deepEqual(error.details, { limit: 2 });
      assert.equal(third.sent, 0, 'not a byte of its body was sent');
      assert.ok(answer.at - started < 1000, `answered after ${Math.round(answer.at - started)} ms`);
      third.destroy();
      // The uploads count for the other kinds of submission too.
      assertError(await submitJson(free, { target: 'webp', url: 'https://example.com/a.png' }), 429, 'concurrency_limit');
    } finally {
      release();
      await Promise.all(trickles);
      for (const upload of inFlight) upload.destroy();
    }
    // Gone, they give their places back.
    await waitFor(async () => (await spoolFiles(daemon.dataDir)).length === 0, 5000, 'the abandoned uploads to be removed');
    await sleep(100);
    const after = await submitFile(free, { target: 'webp', wait: '20' }, { data: image, name: 'after.png' });
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.equal(after.body.status, 'succeeded');
  });

  it('credits: a Content-Length announcing a file that costs more than the balance is 402 before the body; a replay skips the pre-check', async () => {
    const lite = accounts.liteOne;
    // 150 MiB: at least 149 MiB of file, two started 100 MB at the lightest weight (1).
    const big = await RawRequest.post(lite, { 'content-type': MULTIPART, 'content-length': String(150 * MIB) });
    const answer = await big.answer;
    const error = assertRawError(answer, 402, 'insufficient_credits');
    assert.deepEqual(error.details, { cost: 2, remaining: 1, monthly_allowance: 1000 });
    assert.match(error.message, /costs 2 credits but only 1 remain/);
    assert.equal(big.sent, 0);
    big.destroy();
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);

    // The one credit covers a small file...
    const key = { 'idempotency-key': 'upload-limits-replay' };
    const first = await submitFile(lite, { target: 'webp', wait: '20' }, { data: image, name: 'one.png' }, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.credits, 1);
    // ...and then nothing is left: the next upload is refused before its body...
    const broke = await RawRequest.post(lite, { 'content-type': MULTIPART, 'content-length': '1000' });
    const refused = assertRawError(await broke.answer, 402, 'insufficient_credits');
    assert.deepEqual(refused.details, { cost: 1, remaining: 0, monthly_allowance: 1000 });
    assert.equal(broke.sent, 0);
    broke.destroy();
    // ...but a replay of the first is answered with the original conversion, charging nothing.
    const replay = await submitFile(lite, { target: 'webp', wait: '20' }, { data: image, name: 'one.png' }, key);
    assert.equal(replay.status, 200, JSON.stringify(replay.body));
    assert.equal(replay.body.id, first.body.id);
    assert.equal((await getAccount(lite)).body.credits.remaining, 0);
  });
});

describe('request bodies that stall or drag on: 408 request_timeout', () => {
  it('an upload that sends nothing for upload_idle_timeout is cut; its spool file is removed and the connection closed', async () => {
    const upload = await RawRequest.post(accounts.stall, { 'content-type': MULTIPART, 'content-length': String(8 * MIB) });
    await upload.write(multipartHead({ target: 'webp' }, 'stalled.png'));
    await upload.write(Buffer.alloc(256 * 1024, 1));
    const lastByte = performance.now();
    await waitFor(async () => (await spoolFiles(daemon.dataDir)).length === 1, 2000, 'the upload to be spooling');
    const answer = await upload.answer;
    const error = assertRawError(answer, 408, 'request_timeout');
    assert.deepEqual(error.details, { limit: 'upload_idle_timeout', seconds: IDLE_MS / 1000 });
    assert.match(error.message, /waited 1\.5 seconds without receiving any data/);
    const waited = answer.at - lastByte;
    assert.ok(waited >= IDLE_MS - 100 && waited < IDLE_MS + 2000, `answered ${Math.round(waited)} ms after the last byte`);
    assert.equal(answer.headers.connection, 'close');
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    // Closed with the answer, not after the lingering close's idle second.
    const closedAt = await upload.closed;
    // (the lingering close would take a second of idling, and more on a loaded machine).
    assert.ok(closedAt - answer.at < 900, `closed ${Math.round(closedAt - answer.at)} ms after the answer`);
  });

  it('the same idle limit holds for a JSON body; the message says how long it waited, in German too', async () => {
    const request = await RawRequest.post(accounts.stall, { 'content-type': 'application/json', 'content-length': '200', 'accept-language': 'de' });
    await request.write('{"target": "webp", ');
    const started = performance.now();
    const answer = await request.answer;
    const error = assertRawError(answer, 408, 'request_timeout');
    assert.equal(answer.headers['content-language'], 'de');
    assert.match(error.message, /hat 1,5 Sekunden vergeblich auf weitere Daten gewartet/);
    assert.ok(answer.at - started >= IDLE_MS - 100 && answer.at - started < IDLE_MS + 2000, `answered after ${Math.round(answer.at - started)} ms`);
    await request.closed;
  });

  it('a body that trickles but never ends is cut at request_timeout, with the daemon\'s 408 (not Node\'s bare one)', async () => {
    const upload = await RawRequest.post(accounts.stall, { 'content-type': MULTIPART, 'content-length': String(8 * MIB) });
    const started = performance.now();
    await upload.write(multipartHead({ target: 'webp' }, 'trickle.png'));
    const trickle = upload.trickle(300, upload.answer);
    const answer = await upload.answer;
    await trickle;
    const error = assertRawError(answer, 408, 'request_timeout');
    assert.deepEqual(error.details, { limit: 'request_timeout', seconds: TOTAL_MS / 1000 });
    assert.match(error.message, /waited 3 seconds for the whole body/);
    const elapsed = answer.at - started;
    assert.ok(elapsed >= TOTAL_MS - 100 && elapsed < TOTAL_MS + 2000, `answered after ${Math.round(elapsed)} ms`);
    assert.ok(upload.sent < 8 * MIB);
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    await upload.closed;
  });
});

describe(`the disk floor (${FLOOR_MB} MiB) on a 64 MiB data dir`, { skip: disk.skip }, () => {
  const freeBytes = async () => {
    const stats = await statfs(disk.dir!);
    return stats.bavail * stats.bsize;
  };

  it('a declared Content-Length that would take free space below the floor is 503 low_disk_space before the body, counting what other uploads announced', async () => {
    const free = await freeBytes();
    assert.ok(free > 60 * MIB, `${free} bytes free at the start`);
    const headers = (length: number) => ({ 'content-type': MULTIPART, 'content-length': String(length) });

    const alone = await RawRequest.post(accounts.diskA!, headers(40 * MIB));
    const answer = await alone.answer;
    const error = assertRawError(answer, 503, 'api_disabled');
    assert.deepEqual(error.details, { reason: 'low_disk_space' });
    assert.equal(answer.headers['retry-after'], '60');
    assert.match(error.message, /low on disk space/);
    assert.equal(alone.sent, 0);
    alone.destroy();

    // 20 MiB fits on its own...
    const first = await RawRequest.post(accounts.diskA!, headers(20 * MIB));
    await first.write(multipartHead({ target: 'webp' }, 'first.png'));
    await first.write(Buffer.alloc(96 * 1024, 1));
    await waitFor(async () => (await spoolFiles(disk.dir!)).length === 1, 2000, 'the first upload to be spooling');
    try {
      // ...but not beside another 20 MiB still to come, whoever announced it.
      const second = await RawRequest.post(accounts.diskB!, headers(20 * MIB));
      const refused = assertRawError(await second.answer, 503, 'api_disabled');
      assert.deepEqual(refused.details, { reason: 'low_disk_space' });
      assert.equal(second.sent, 0);
      second.destroy();
    } finally {
      first.destroy();
    }
    await waitFor(async () => (await spoolFiles(disk.dir!)).length === 0, 5000, 'the abandoned upload to be removed');
  });

  it('an upload that would take free space below the floor is cut mid-body with 503, leaves nothing, and another account still converts', async () => {
    const before = await freeBytes();
    // Free space as the test sees it while the upload runs: it must never fall below the floor.
    let lowest = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        lowest = Math.min(lowest, await freeBytes());
        await sleep(1);
      }
    })();
    // Chunked: nothing announced, so only the bytes themselves can stop it. 56 MiB would fit on
    // the disk: only the floor refuses them. The body is never ended: an answer is a cut.
    const upload = await RawRequest.post(accounts.diskA!, { 'content-type': MULTIPART });
    await upload.write(multipartHead({ target: 'webp' }, 'flood.png'));
    await upload.stream(56 * MIB);
    const answer = await upload.answer;
    sampling = false;
    await sampler;
    upload.destroy();
    const error = assertRawError(answer, 503, 'api_disabled');
    assert.deepEqual(error.details, { reason: 'low_disk_space' });
    assert.equal(answer.headers['retry-after'], '60');
    const crossing = before - FLOOR_MB * MIB;
    // Not refused before it reached the floor (the rest is drained and dropped quickly once it
    // is cut, so how much more was sent says nothing)...
    assert.ok(upload.sentWhenAnswered >= crossing - MIB, `answered after ${(upload.sentWhenAnswered / MIB).toFixed(1)} MiB; the floor was ${(crossing / MIB).toFixed(1)} MiB away`);
    // ...and never past it.
    assert.ok(lowest >= FLOOR_MB * MIB - 512 * 1024, `free space fell to ${(lowest / MIB).toFixed(2)} MiB`);
    assert.ok(lowest < before - 8 * MIB, `the sampler saw the upload fill the disk (lowest ${(lowest / MIB).toFixed(2)} MiB)`);
    assert.deepEqual(await spoolFiles(disk.dir!), []);
    assert.ok((await freeBytes()) > before - MIB, 'the space it took is free again');
    // At once, not a statfs period later: the space the cut upload took counts as free again
    // (4 MiB would not fit above the floor otherwise). A real PNG, padded: it converts.
    const padded = Buffer.alloc(4 * MIB);
    image.copy(padded);
    const ok = await submitFile(accounts.diskB!, { target: 'webp', wait: '20' }, { data: padded, name: 'small.png' });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, 'succeeded');
  });

  it('a result the disk has no room for above the floor fails conversion_failed and leaves nothing', { skip: disk.skip }, async () => {
    // Ten minutes of a tone: 2.4 MB as mp3, some 53 MB as wav, more than the room above the floor
    // (about 32 MiB less what the store takes), far under the output cap by the input and the plan's.
    const { ffmpegRun, mediaTools } = await import('../helpers/registry-pairs-fixtures.ts');
    const mp3 = join(disk.dir!, '..', `tone-${process.pid}.mp3`);
    await ffmpegRun(await mediaTools(), ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=600', '-ac', '1', '-b:a', '32k', mp3]);
    const room = (await freeBytes()) - FLOOR_MB * MIB;
    const created = await submitFile(accounts.diskB!, { target: 'wav', wait: '30' }, { data: await readFile(mp3), name: 'tone.mp3' });
    await rm(mp3, { force: true });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const done = created.body;
    assert.equal(done.status, 'failed', `a 53 MB wav in ${(room / MIB).toFixed(1)} MiB of room: ${JSON.stringify(done)}`);
    assert.equal(done.error?.code, 'conversion_failed');
    assert.match(done.error!.message, /room left on the server's disk/);
    assert.equal(done.credits, 0);
    await waitFor(async () => (await workFiles(disk.dir!)).length === 0, 5000, 'no partial result');
    // The input goes once the end state is on disk, a moment after the answer.
    await waitFor(async () => !(await readdir(join(disk.dir!, 'blobs', 'inputs'))).includes(done.id), 5000, 'the input to be removed');
    const after = await freeBytes();
    assert.ok(after >= FLOOR_MB * MIB, `free space stayed above the floor: ${(after / MIB).toFixed(1)} MiB free, ${(room / MIB).toFixed(1)} MiB of room before; inputs ${JSON.stringify(await readdir(join(disk.dir!, 'blobs', 'inputs')))}`);
  });
});
