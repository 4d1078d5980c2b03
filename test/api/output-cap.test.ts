/**
 * Outputs are capped (issue "No account can take the daemon down", 4): a result may be at most
 * `output_cap_ratio` times its input, never less than `output_cap_floor_mb`, never more than its
 * plan's `max_output_mb`. Over it the conversion fails conversion_failed with the limit in the
 * message, costs nothing and leaves nothing on disk, whichever engine wrote it: the data engine
 * stops writing at the cap, ffmpeg stops at `-fs`, and the runner measures every result.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { download, getAccount, newAccount, submitFile, waitForEnd, type Client, type PublicConversion } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { ffmpegRun, mediaTools } from '../helpers/registry-pairs-fixtures.ts';
import { workFiles } from '../helpers/work-files.ts';

const MIB = 1024 * 1024;
let daemon: DaemonHandle;
let free: Client;
let lite: Client;
let dir: string;

/** A CSV whose JSON is ten times its size: long column names, one-digit values. */
function wideCsv(rows: number): Buffer {
  const names = Array.from({ length: 20 }, (_, i) => `a_rather_long_column_name_${i}`);
  const lines = [names.join(','), ...Array.from({ length: rows }, () => names.map(() => '1').join(','))];
  return Buffer.from(`${lines.join('\n')}\n`);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-output-cap-'));
  daemon = await startDaemon({ args: ['--output-cap-ratio', '2', '--output-cap-floor-mb', '1', '--plan', 'lite.max_output_mb=1'] });
  [free, lite] = await Promise.all([newAccount(daemon, 'free'), newAccount(daemon, 'lite')]);
});

after(async () => {
  await daemon?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function convert(client: Client, data: Buffer, name: string, target: string, fields: Record<string, string> = {}): Promise<PublicConversion> {
  const created = await submitFile(client, { target, wait: '30', ...fields }, { data, name });
  assert.ok(created.status === 200 || created.status === 202, `${created.status} ${JSON.stringify(created.body)}`);
  return created.status === 200 ? created.body : waitForEnd(client, created.body.id);
}

/** Failed over its cap, free of charge, and nothing of it on disk. */
async function assertCapped(client: Client, done: PublicConversion, message: RegExp, credits: number | null): Promise<void> {
  assert.equal(done.status, 'failed', JSON.stringify(done));
  assert.equal(done.error?.code, 'conversion_failed');
  assert.match(done.error!.message, message);
  assert.equal(done.credits, 0);
  assert.equal((await getAccount(client)).body.credits.remaining, credits, 'nothing was charged');
  const blobs = join(daemon.dataDir, 'blobs');
  assert.ok(!(await readdir(join(blobs, 'results'))).includes(done.id), 'no result file');
  assert.deepEqual(await workFiles(daemon.dataDir), [], 'no partial output');
}

describe('output cap', () => {
  it('data: a CSV whose JSON outgrows 2x its input (at least 1 MB) stops at the cap', async () => {
    const credits = (await getAccount(free)).body.credits.remaining;
    const csv = wideCsv(6000);
    const done = await convert(free, csv, 'wide.csv', 'json');
    await assertCapped(free, done, /^The result would be larger than its limit of 1 MB \(2 times the input, at least 1 MB\)\.$/, credits);
  });

  it('under the cap it converts as before', async () => {
    const done = await convert(free, wideCsv(100), 'small.csv', 'json');
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const rows = JSON.parse((await download(free, done.id)).bytes.toString('utf8')) as unknown[];
    assert.equal(rows.length, 100);
  });

  it('ffmpeg: an mp3 whose wav is 20x its size stops at -fs', async () => {
    const mp3 = join(dir, 'tone.mp3');
    await ffmpegRun(await mediaTools(), ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=40', '-ac', '1', '-b:a', '32k', mp3]);
    const credits = (await getAccount(free)).body.credits.remaining;
    const done = await convert(free, await readFile(mp3), 'tone.mp3', 'wav');
    await assertCapped(free, done, /larger than its limit of 1 MB \(2 times the input, at least 1 MB\)/, credits);
  });

  it('image: the runner measures a result the engine did not cap (a noisy JPEG as TIFF)', async () => {
    const jpg = await sharp({ create: { width: 1200, height: 1200, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
      .jpeg({ quality: 30 }).toBuffer();
    assert.ok(jpg.length * 2 < MIB, 'the floor, not the ratio, is the limit here');
    const credits = (await getAccount(free)).body.credits.remaining;
    const done = await convert(free, jpg, 'noise.jpg', 'tiff');
    await assertCapped(free, done, /^The result \([\d.]+ MB\) is larger than its limit of 1 MB \(2 times the input, at least 1 MB\)\.$/, credits);
  });

  it("the plan's max_output_mb caps what the ratio would allow", async () => {
    const credits = (await getAccount(lite)).body.credits.remaining;
    // 2 x 640 KB is more than the plan's 1 MB: the plan's cap is the one that holds.
    const done = await convert(lite, wideCsv(16_000), 'wide.csv', 'json');
    assert.ok((done.input_size ?? 0) * 2 > MIB);
    await assertCapped(lite, done, /limit of 1 MB \(at most 1 MB on the Lite plan\)/, credits);
  });
});
