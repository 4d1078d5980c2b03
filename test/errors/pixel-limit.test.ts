/**
 * An image over the pixel limit: the failure says the image's size and the
 * limit, in words and in `details`; a resize does not get around it, and the message says so; the
 * limit is the daemon's `--max-input-pixels`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { api, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

/** 2000 x 1500 = 3,000,000 pixels, between the two limits the daemons below use. */
const image = () => sharp({ create: { width: 2000, height: 1500, channels: 3, background: { r: 10, g: 120, b: 200 } } }).png().toBuffer();

async function convert(daemon: DaemonHandle, fields: Record<string, string>): Promise<{ status: string; error: { code: string; message: string; details?: Record<string, number> } | null }> {
  const form = new FormData();
  for (const [name, value] of Object.entries({ target: 'webp', wait: '30', ...fields })) form.append(name, value);
  form.append('file', new Blob([await image()]), 'large.png');
  const created = await api(daemon, '/conversions', { method: 'POST', body: form });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  return created.body;
}

describe('the pixel limit', () => {
  let strict: DaemonHandle;
  let roomy: DaemonHandle;

  before(async () => {
    [strict, roomy] = await Promise.all([startDaemon({ args: ['--max-input-pixels', '2000000'] }), startDaemon({ env: { CONVD_MAX_INPUT_PIXELS: '4000000' } })]);
  });

  after(async () => {
    await Promise.all([strict?.dispose(), roomy?.dispose()]);
  });

  it('says the image\'s size and the limit, in words and in details', async () => {
    const done = await convert(strict, {});
    assert.equal(done.status, 'failed');
    assert.equal(done.error?.code, 'input_invalid');
    assert.match(done.error!.message, /2,000 x 1,500 pixels \(3,000,000\)/);
    assert.match(done.error!.message, /at most 2,000,000 pixels/);
    assert.deepEqual(done.error!.details, { width: 2000, height: 1500, pixels: 3_000_000, limit: 2_000_000 });
  });

  it('a resize asked for: the message says the image is too large to decode at all', async () => {
    const done = await convert(strict, { width: '100' });
    assert.equal(done.status, 'failed');
    assert.match(done.error!.message, /too large to decode at all/);
    assert.equal(done.error!.details?.limit, 2_000_000);
  });

  it('a higher limit (CONVD_MAX_INPUT_PIXELS) converts the same image', async () => {
    const done = await convert(roomy, {});
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  });
});
