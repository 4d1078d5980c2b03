/**
 * An engine's own limit on runs at once (Engine.maxConcurrentRuns: ffmpeg's, one per core) is
 * kept by the runner, with the real media engine: a conversion waits its turn before its time
 * limit starts, so a queue of long jobs never times out the ones still waiting.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createMediaEngine } from '../src/engines/media/media-engine.ts';
import type { AccountRecord } from '../src/model/account.ts';
import { defaultServiceConfig } from '../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../src/service/system.ts';
import { silentWav } from './helpers/hostile-files.ts';
import { waitUntil } from './ops-support.ts';

const LIMIT_MS = 3000;
let dir: string;
let system: ConversionSystem;
let account: AccountRecord;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-runner-gate-'));
  await silentWav(join(dir, 'ten-hours.wav'), 10);
  await silentWav(join(dir, 'short.wav'), 1 / 3600);
  system = await openSystem({
    dataDir: join(dir, 'data'),
    config: defaultServiceConfig({ engineTimeoutMs: { media: LIMIT_MS } }),
    workers: 2,
    engines: [createMediaEngine({ maxConcurrentRuns: 1 })],
    ephemeralStore: true,
  });
  await system.start();
  account = await system.accounts.createAccount({ plan: 'unmetered', name: 'gate' });
});
after(async () => {
  await system.stop();
  await rm(dir, { recursive: true, force: true });
});

async function submit(file: string, target: string): Promise<string> {
  const path = system.blobs.spoolPath();
  await copyFile(join(dir, file), path);
  const outcome = await system.conversions.create(account, {
    fields: { target }, options: {}, files: [{ path, size: 0, sha256: '', filename: file }],
  });
  return outcome.record.id;
}

describe('engine run limits', () => {
  it('a conversion waiting for its turn is not timed out for the wait; it runs when the one before ends', async () => {
    // Ten hours of audio: runs until its own limit ends it, holding the only ffmpeg place.
    const long = await submit('ten-hours.wav', 'mp3');
    await waitUntil('the long one to run', async () => ((await system.store.getConversion(long))?.status === 'processing' ? true : undefined), 5000);
    const short = await submit('short.wav', 'ogg');
    // Both were taken by the two workers; the short one waits at the gate, not in the queue.
    await sleep(200);
    assert.equal((await system.store.getConversion(short))?.status, 'processing');
    const first = await system.conversions.waitForEnd((await system.store.getConversion(long))!, 30);
    assert.deepEqual([first.status, first.error?.code], ['failed', 'timeout']);
    // It waited about as long as its own limit: counted, that wait alone would have timed it out.
    const second = await system.conversions.waitForEnd((await system.store.getConversion(short))!, 30);
    assert.equal(second.status, 'succeeded', JSON.stringify(second.error));
    assert.ok(Date.parse(second.finished_at!) >= Date.parse(first.finished_at!), 'the short one ran after the long one ended');
  });
});
