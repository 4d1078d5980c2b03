/**
 * States and transitions over real HTTP (docs/api.md): queued -> fetching -> processing ->
 * succeeded with progress; cancel of queued and of running work; DELETE of a result -> expired ->
 * download 410; failed with credits 0 (a corrupt image, a decompression bomb); `wait` answering
 * 200 at once when done and 202 + Location when not, event-driven; state kept across a restart;
 * and the expiry sweeper deleting result files. One worker, so a held URL input keeps the queue
 * behind it waiting for as long as a test needs.
 */
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import {
  assertError, call, download, InputServer, png, pollUntilStatus, slowPng, submitFile, submitJson, waitForEnd,
  type PublicConversion,
} from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { pngBomb } from '../helpers/hostile-files.ts';
import { editStoreFile, shardBases } from '../helpers/store-files.ts';

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}


describe('conversion lifecycle over HTTP', () => {
  let daemon: DaemonHandle;
  const inputs = new InputServer();
  let image: Buffer;
  let slow: Buffer;
  let heldCount = 0;

  /** Submits a URL input whose server holds the response: it occupies the one worker in `fetching`. */
  async function occupyWorker(): Promise<{ conversion: PublicConversion; release: () => void }> {
    const path = `/held/${++heldCount}.png`;
    const url = inputs.serve(path, image, { hold: true });
    const created = await submitJson(daemon, { target: 'webp', url });
    assert.equal(created.status, 202);
    await inputs.requested(path);
    return { conversion: created.body, release: () => inputs.release(path) };
  }

  before(async () => {
    [daemon] = await Promise.all([startDaemon({ args: ['--workers', '1', '--allow-private-urls'] }), inputs.start()]);
    [image, slow] = await Promise.all([png(24, 24), slowPng(1000)]);
  });
  after(async () => {
    await inputs.stop();
    await daemon.dispose();
  });

  it('queued -> fetching -> processing -> succeeded, with progress', async () => {
    const held = await occupyWorker();
    let queuedId = '';
    try {
      const fetching = await pollUntilStatus(daemon, held.conversion.id, 'fetching');
      assert.equal(fetching.progress, null);
      assert.ok(fetching.started_at);

      const queued = await submitFile(daemon, { target: 'avif' }, { data: slow, name: 'slow.png' });
      assert.equal(queued.status, 202);
      queuedId = queued.body.id;
      assert.equal(queued.body.status, 'queued');
      assert.equal(queued.body.progress, null);
      assert.equal(queued.body.started_at, null);
      assert.equal(queued.body.finished_at, null);
      assert.equal(queued.body.result, null);
      assert.equal(queued.body.error, null);
      assert.equal(queued.headers.get('location'), queued.body.links.self);
      assertError(await call(daemon, `/conversions/${queuedId}/download`), 409, 'not_ready');
      const listed = await call<{ data: PublicConversion[] }>(daemon, '/conversions?status=queued');
      assert.ok(listed.body.data.some((c) => c.id === queuedId));
    } finally {
      held.release();
    }

    const processing = await pollUntilStatus(daemon, queuedId, 'processing');
    assert.ok(Number.isInteger(processing.progress) && processing.progress! >= 0 && processing.progress! < 100, String(processing.progress));
    assert.ok(processing.started_at);
    assert.equal(processing.finished_at, null);
    assertError(await call(daemon, `/conversions/${queuedId}/download`), 409, 'not_ready');

    const done = await waitForEnd(daemon, queuedId);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.progress, 100);
    const meta = await sharp((await download(daemon, queuedId)).bytes).metadata();
    assert.deepEqual([meta.format, meta.compression, meta.width, meta.height], ['heif', 'av1', 1000, 1000]);
    assert.equal((await waitForEnd(daemon, held.conversion.id)).status, 'succeeded');
  });

  describe('wait', () => {
    it('answers 200 at once when the conversion ends within it', async () => {
      const started = Date.now();
      const got = await submitFile(daemon, { target: 'webp', wait: '30' }, { data: image, name: 'quick.png' });
      assert.equal(got.status, 200);
      assert.equal(got.body.status, 'succeeded');
      assert.equal(got.headers.get('location'), null);
      assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    });

    it('answers 202 with Location when the time is up; wait=0 answers at once', async () => {
      const held = await occupyWorker();
      try {
        const started = Date.now();
        const waited = await submitFile(daemon, { target: 'webp', wait: '1' }, { data: image, name: 'late.png' });
        const elapsed = Date.now() - started;
        assert.equal(waited.status, 202);
        assert.equal(waited.body.status, 'queued');
        assert.equal(waited.headers.get('location'), `${daemon.baseUrl}/conversions/${waited.body.id}`);
        assert.ok(elapsed >= 900 && elapsed < 4_000, `answered after ${elapsed} ms`);

        const immediate = Date.now();
        const noWait = await submitFile(daemon, { target: 'webp', wait: '0' }, { data: image, name: 'now.png' });
        assert.equal(noWait.status, 202);
        assert.ok(Date.now() - immediate < 1_000);

        // GET with wait always answers 200, with the state at the end of the wait.
        const polled = await call(daemon, `/conversions/${held.conversion.id}?wait=1`);
        assert.equal(polled.status, 200);
        assert.equal(polled.body.status, 'fetching');
      } finally {
        held.release();
      }
    });

    it('answers the moment the conversion ends, not at the end of the wait or a polling tick', async () => {
      const held = await occupyWorker();
      const waiting = call(daemon, `/conversions/${held.conversion.id}?wait=20`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const released = Date.now();
      held.release();
      const got = await waiting;
      const answered = Date.now();
      assert.equal(got.status, 200);
      assert.equal(got.body.status, 'succeeded');
      assert.ok(answered - released < 3_000, `answered ${answered - released} ms after the input was released`);
      // Measured from the end itself (same clock): a polling waiter would lag by up to its tick.
      const lag = answered - Date.parse(got.body.finished_at!);
      assert.ok(lag < 500, `answered ${lag} ms after the conversion ended`);
    });
  });

  describe('cancel', () => {
    it('DELETE of a queued conversion cancels it; it never runs', async () => {
      const held = await occupyWorker();
      let id = '';
      try {
        const queued = await submitFile(daemon, { target: 'webp' }, { data: image, name: 'never.png' });
        id = queued.body.id;
        assert.equal(queued.body.status, 'queued');
        const cancelled = await call(daemon, `/conversions/${id}`, { method: 'DELETE' });
        assert.equal(cancelled.status, 200);
        assert.equal(cancelled.body.status, 'cancelled');
        assert.equal(cancelled.body.started_at, null);
        assert.ok(cancelled.body.finished_at);
        assert.equal(cancelled.body.credits, 0);
        assert.equal(cancelled.body.result, null);
      } finally {
        held.release();
      }
      await waitForEnd(daemon, held.conversion.id);
      const after = await call(daemon, `/conversions/${id}`);
      assert.equal(after.body.status, 'cancelled');
      assert.equal(after.body.started_at, null, 'the worker never took it');
      assertError(await call(daemon, `/conversions/${id}/download`), 409, 'not_ready');
      assertError(await call(daemon, `/conversions/${id}`, { method: 'DELETE' }), 409, 'invalid_state');
    });

    it('DELETE of a running conversion aborts it; the worker is free again', async () => {
      const running = await submitFile(daemon, { target: 'avif' }, { data: slow, name: 'abort.png' });
      await pollUntilStatus(daemon, running.body.id, 'processing');
      const cancelled = await call(daemon, `/conversions/${running.body.id}`, { method: 'DELETE' });
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.status, 'cancelled');
      assert.ok(cancelled.body.started_at);
      assert.equal(cancelled.body.result, null);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const after = await call(daemon, `/conversions/${running.body.id}`);
      assert.equal(after.body.status, 'cancelled', 'a late engine result does not revive it');
      assert.equal(after.body.result, null);
      assert.equal(await exists(join(daemon.dataDir, 'blobs', 'results', running.body.id)), false);
      const next = await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'next.png' });
      assert.equal(next.body.status, 'succeeded');
    });
  });

  it('DELETE of a succeeded conversion deletes the result: expired, download 410', async () => {
    const done = await submitFile(daemon, { target: 'webp', wait: '20' }, { data: image, name: 'keep.png' });
    assert.equal(done.body.status, 'succeeded');
    const file = join(daemon.dataDir, 'blobs', 'results', done.body.id);
    assert.equal(await exists(file), true);
    assert.ok(Date.parse(done.body.result!.expires_at) > Date.now() + 3_600_000, 'a result expires hours from now');
    const asked = Date.now();
    const deleted = await call(daemon, `/conversions/${done.body.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200);
    assert.equal(deleted.body.status, 'expired');
    assert.equal(await exists(file), false, 'the file is gone');
    // It does not look downloadable: it expired when it was deleted (GET and the list say the same).
    const expiredAt = Date.parse(deleted.body.result!.expires_at);
    assert.ok(expiredAt >= asked - 1000 && expiredAt <= Date.now(), `expires_at is the deletion time: ${deleted.body.result!.expires_at}`);
    const got = (await call(daemon, `/conversions/${done.body.id}`)).body;
    assert.equal(got.status, 'expired');
    assert.equal(got.result!.expires_at, deleted.body.result!.expires_at);
    const listed = (await call<{ data: PublicConversion[] }>(daemon, '/conversions')).body.data.find((c) => c.id === done.body.id);
    assert.equal(listed?.result?.expires_at, deleted.body.result!.expires_at);
    const error = assertError(await call(daemon, `/conversions/${done.body.id}/download`), 410, 'expired');
    assert.match(error.message, /expired/);
    assertError(await call(daemon, `/conversions/${done.body.id}`, { method: 'DELETE' }), 409, 'invalid_state');
  });

  describe('failure', () => {
    it('a corrupt image fails with input_invalid and credits 0; DELETE is 409 invalid_state', async () => {
      const truncated = (await png(64, 64)).subarray(0, 60);
      for (const data of [Buffer.from('not an image at all'), truncated]) {
        const failed = await submitFile(daemon, { target: 'webp', wait: '20' }, { data, name: 'broken.png' });
        assert.equal(failed.status, 200);
        assert.equal(failed.body.status, 'failed');
        assert.equal(failed.body.credits, 0);
        assert.equal(failed.body.result, null);
        assert.deepEqual(Object.keys(failed.body.error!).sort(), ['code', 'message']);
        assert.equal(failed.body.error!.code, 'input_invalid');
        assert.ok(failed.body.error!.message.length > 0);
        assert.ok(failed.body.finished_at);
        assertError(await call(daemon, `/conversions/${failed.body.id}/download`), 409, 'not_ready');
        assertError(await call(daemon, `/conversions/${failed.body.id}`, { method: 'DELETE' }), 409, 'invalid_state');
      }
    });

    it('a decompression bomb (30000 x 30000 pixels in a small PNG) fails cleanly with input_invalid', async () => {
      const bomb = pngBomb(30_000, 30_000);
      assert.ok(bomb.length < 1024 * 1024, `${bomb.length} bytes`);
      const header = await sharp(bomb, { limitInputPixels: false }).metadata();
      assert.deepEqual([header.width, header.height], [30_000, 30_000]);
      const started = Date.now();
      const failed = await submitFile(daemon, { target: 'png', wait: '30' }, { data: bomb, name: 'bomb.png' });
      assert.equal(failed.status, 200);
      assert.equal(failed.body.status, 'failed');
      assert.equal(failed.body.error?.code, 'input_invalid');
      assert.match(failed.body.error?.message ?? '', /pixel/i);
      assert.ok(Date.now() - started < 10_000, 'refused without decoding the pixels');
      // The daemon is fine and still converts.
      assert.equal((await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'ok.png' })).body.status, 'succeeded');
    });
  });

  describe('across a restart', () => {
    let kept: PublicConversion;
    let keptBytes: Buffer;
    let expiring: PublicConversion;

    before(async () => {
      kept = (await submitFile(daemon, { target: 'jpg', wait: '20' }, { data: image, name: 'kept.png' })).body;
      expiring = (await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'expiring.png' })).body;
      assert.equal(kept.status, 'succeeded');
      assert.equal(expiring.status, 'succeeded');
      keptBytes = (await download(daemon, kept.id)).bytes;

      // While stopped, move one result's expiry into the past: the sweeper must catch it on start.
      await daemon.stop();
      let found = false;
      for (const base of await shardBases(daemon.dataDir)) {
        await editStoreFile<{ conversions: { id: string; result: { expires_at: string } | null }[] }>(base, (shard) => {
          const record = shard.conversions.find((c) => c.id === expiring.id);
          if (!record) return;
          record.result!.expires_at = new Date(Date.now() - 60_000).toISOString();
          found = true;
        });
      }
      assert.ok(found, 'the conversion is in the store');
      daemon = await daemon.restart();
    });

    it('conversions and results are still there', async () => {
      const got = await call(daemon, `/conversions/${kept.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.status, 'succeeded');
      assert.equal(got.body.result?.size, kept.result?.size);
      assert.equal(got.body.links.self, `${daemon.baseUrl}/conversions/${kept.id}`);
      const file = await download(daemon, kept.id);
      assert.equal(file.status, 200);
      assert.deepEqual(file.bytes, keptBytes);
    });

    it('a result past expires_at is expired by the sweeper: file deleted, download 410', async () => {
      assert.equal(await exists(join(daemon.dataDir, 'blobs', 'results', expiring.id)), false, 'the sweeper deleted the file');
      const got = await call(daemon, `/conversions/${expiring.id}`);
      assert.equal(got.body.status, 'expired');
      assertError(await call(daemon, `/conversions/${expiring.id}/download`), 410, 'expired');
      const listed = await call<{ data: PublicConversion[] }>(daemon, '/conversions?status=expired&limit=100');
      assert.ok(listed.body.data.some((c) => c.id === expiring.id));
    });
  });
});
