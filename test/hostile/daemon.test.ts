/**
 * Hostile inputs through a real daemon, uploaded as multipart like any client would: each ends
 * `failed` with a stable error code, costs nothing (the reservation is released), and leaves no
 * ffmpeg/ffprobe process under the daemon and nothing in its scratch directories. Also: DELETE of
 * a running video conversion kills ffmpeg's whole process group.
 */
import assert from 'node:assert/strict';
import { open, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import {
  blobEntries, getJson, mediaProcessesOf, meteredClient, remainingCredits, uploadFile, waitForEnd, waitUntil, type Client,
} from '../helpers/registry-pairs-daemon.ts';
import { processesInGroup } from '../helpers/engines-proc.ts';
import { breakXref, silentWav, storedZip } from '../helpers/hostile-files.ts';
import { ffmpegRun, makeFixture, mediaTools } from '../helpers/registry-pairs-fixtures.ts';
import { workFiles } from '../helpers/work-files.ts';

/** The media time limit of the second daemon, through the environment variable convd reads. */
const MEDIA_LIMIT_MS = 1500;

const tools = await mediaTools();
let dir: string;
let daemon: DaemonHandle;
let client: Client;
let limited: DaemonHandle;
let limitedClient: Client;
let mp4: Buffer;
let pdf: Buffer;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-hostile-'));
  [daemon, limited] = await Promise.all([
    startDaemon(),
    startDaemon({ env: { CONVD_ENGINE_TIMEOUT_MS_MEDIA: String(MEDIA_LIMIT_MS) } }),
  ]);
  // Metered accounts: a failure must release the reservation, which an unmetered one never holds.
  [client, limitedClient] = await Promise.all([meteredClient(daemon, 'pro'), meteredClient(limited, 'pro')]);
  mp4 = await readFile((await makeFixture(dir, 'mp4', tools)).path);
  pdf = await readFile((await makeFixture(dir, 'pdf', tools)).path);
});

after(async () => {
  await Promise.all([daemon?.dispose(), limited?.dispose()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Nothing of the conversion is left: no media process under the daemon, no scratch or input file. */
async function assertNothingLeft(d: DaemonHandle, id: string): Promise<void> {
  assert.deepEqual(mediaProcessesOf(d.process.pid!), [], 'no ffmpeg or ffprobe under the daemon, zombies included');
  // The work dir goes right after the end state is stored, the input once that state is on disk
  // (after the store's fsync): both a moment after the API shows `failed`. A moment, not more.
  await waitUntil(async () => (await workFiles(d.dataDir)).length === 0, 2000, 'no file in blobs/work');
  await waitUntil(async () => !(await blobEntries(d, 'inputs')).includes(id), 2000, 'the input to be deleted');
  assert.deepEqual(await blobEntries(d, 'spool'), [], 'blobs/spool is empty');
  assert.ok(!(await blobEntries(d, 'results')).includes(id), 'no result');
}

/** Uploads `path` as `name`, waits for the end, and checks the failure and the clean-up. */
async function expectFailure(d: DaemonHandle, c: Client, path: string, name: string, target: string, code: string): Promise<PublicConversion> {
  const before = await remainingCredits(c);
  const created = await uploadFile(c, { target, wait: '30' }, path, name);
  assert.ok(created.status === 200 || created.status === 202, `${created.status} ${JSON.stringify(created.body)}`);
  const done = created.body.status === 'failed' ? created.body : await waitForEnd(c, created.body.id);
  assert.equal(done.status, 'failed');
  const error = done.error;
  assert.ok(error, 'a failed conversion carries an error');
  assert.equal(error.code, code, error.message);
  assert.ok(!error.message.includes(d.dataDir), `the message does not show server paths: ${error.message}`);
  assert.equal(done.credits, 0);
  assert.equal(done.result, null);
  assert.equal(await remainingCredits(c), before, 'nothing was charged');
  await assertNothingLeft(d, done.id);
  return done;
}

describe('hostile inputs through the daemon end failed, cost nothing, leave nothing', () => {
  it('a truncated video: input_invalid', async () => {
    const path = join(dir, 'truncated.mp4');
    await writeFile(path, mp4.subarray(0, mp4.length >> 1));
    await expectFailure(daemon, client, path, 'holiday.mp4', 'webm', 'input_invalid');
  });

  it('a zip renamed .mp4: refused at submission, naming the content (zip) and the name (.mp4)', async () => {
    const path = join(dir, 'archive.mp4');
    await writeFile(path, storedZip('clip.mp4', mp4));
    const refused = await uploadFile(client, { target: 'mp4', wait: '30' }, path, 'clip.mp4');
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match((refused.body as unknown as { error: { message: string } }).error.message, /zip \(the file's content; its name says \.mp4\) to mp4/);
  });

  it('a 1 GiB sparse file named .mp4 (streamed over loopback): input_invalid', async () => {
    const path = join(dir, 'sparse.mp4');
    const handle = await open(path, 'w');
    await handle.truncate(1024 ** 3);
    await handle.close();
    const began = Date.now();
    const done = await expectFailure(daemon, client, path, 'huge.mp4', 'gif', 'input_invalid');
    assert.equal(done.input_size, 1024 ** 3);
    console.log(`1 GiB sparse upload + failure took ${Date.now() - began} ms`);
  });

  it('a PDF with a broken xref: input_invalid', async () => {
    const path = join(dir, 'broken-xref.pdf');
    await writeFile(path, breakXref(pdf));
    const done = await expectFailure(daemon, client, path, 'report.pdf', 'pdf', 'input_invalid');
    assert.match(done.error!.message, /not a readable PDF/);
  });

  it(`a 10-hour silent audio hits the media time limit (CONVD_ENGINE_TIMEOUT_MS_MEDIA=${MEDIA_LIMIT_MS}): timeout`, async () => {
    const path = join(dir, 'ten-hours.wav');
    await silentWav(path, 10);
    const done = await expectFailure(limited, limitedClient, path, 'night.wav', 'mp3', 'timeout');
    const ran = Date.parse(done.finished_at!) - Date.parse(done.started_at!);
    assert.ok(ran >= MEDIA_LIMIT_MS && ran < MEDIA_LIMIT_MS + 5000, `stopped at the limit, after ${ran} ms`);
  });
});

describe('cancel', () => {
  it('DELETE of a running video conversion kills ffmpeg and its whole process group', async () => {
    // 30 s of 320x240 to VP9 at the slowest preset: minutes of work, so it is surely still running.
    const path = join(dir, 'long.mp4');
    await ffmpegRun(tools, [
      '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=30', '-f', 'lavfi', '-i', 'sine=duration=30',
      '-shortest', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', path,
    ]);
    const before = await remainingCredits(client);
    const created = await uploadFile(client, { target: 'webm', preset: 'veryslow' }, path, 'long.mp4');
    assert.equal(created.status, 202);
    const id = created.body.id;
    const pid = daemon.process.pid!;
    const findFfmpeg = () => mediaProcessesOf(pid).find((p) => p.command === 'ffmpeg' && p.state !== 'Z');
    await waitUntil(() => findFfmpeg() !== undefined, 20_000, 'ffmpeg to start');
    const ffmpeg = findFfmpeg()!;
    assert.equal(ffmpeg.pgrp, ffmpeg.pid, 'ffmpeg leads its own process group');
    assert.equal((await getJson<PublicConversion>(client, `/conversions/${id}`)).body.status, 'processing');

    const cancelled = await getJson<PublicConversion>(client, `/conversions/${id}`, 'DELETE');
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    await waitUntil(() => mediaProcessesOf(pid).length === 0, 5000, 'ffmpeg to be killed and reaped');
    assert.deepEqual(groupMembers(ffmpeg.pgrp), [], 'nothing is left of its process group');
    await assertNothingLeft(daemon, id);
    assert.equal(await remainingCredits(client), before, 'nothing was charged');
    const later = await getJson<PublicConversion>(client, `/conversions/${id}`);
    assert.deepEqual([later.body.status, later.body.credits, later.body.error], ['cancelled', 0, null]);
  });
});

/** Pids in process group `pgid` (zombies included), read from /proc. */
function groupMembers(pgid: number): number[] {
  return processesInGroup(pgid).map((p) => p.pid);
}
