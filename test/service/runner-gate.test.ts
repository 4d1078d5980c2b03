/**
 * An engine's own limit on runs at once (Engine.maxConcurrentRuns: ffmpeg's, one per core) is
 * kept by the runner, with the real media engine: a conversion waits its turn before its time
 * limit starts, so a queue of long jobs never times out the ones still waiting. And an engine
 * that must get a helper process ready first (Engine.startsClock: the engine host) starts the
 * clock itself when its work begins.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createMediaEngine } from '../../src/engines/media/media-engine.ts';
import type { Engine } from '../../src/engines/types.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { silentWav } from '../helpers/hostile-files.ts';
import { waitUntil } from '../helpers/ops-support.ts';

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
    // Only the plan's cap on results: ffmpeg writes silence as MP3 at hundreds of MB a second on a
    // fast box, past the default 64 MB before the time limit this shows.
    config: defaultServiceConfig({ engineTimeoutMs: { media: LIMIT_MS }, outputCapRatio: 0 }),
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
    // Past the gate, in ffmpeg: its progress moved. (Its status reads processing from its start,
    // before the start's fsync and the gate: a short one that came then could go first.)
    await waitUntil('the long one to run', async () => (((await system.store.getConversion(long))?.progress ?? 0) > 0 ? true : undefined), 10_000);
    const short = await submit('short.wav', 'ogg');
    // Both were taken by the two workers; the short one waits at the gate, not in the queue.
    await sleep(200);
    const longNow = await system.store.getConversion(long);
    assert.equal((await system.store.getConversion(short))?.status, 'processing', `the long one: ${longNow?.status} ${JSON.stringify(longNow?.error ?? null)}`);
    const first = await system.conversions.waitForEnd((await system.store.getConversion(long))!, 30);
    assert.deepEqual([first.status, first.error?.code], ['failed', 'timeout'], first.error?.message);
    // It waited about as long as its own limit: counted, that wait alone would have timed it out.
    const second = await system.conversions.waitForEnd((await system.store.getConversion(short))!, 30);
    assert.equal(second.status, 'succeeded', JSON.stringify(second.error));
    assert.ok(Date.parse(second.finished_at!) >= Date.parse(first.finished_at!), 'the short one ran after the long one ended');
  });
});

describe('an engine that starts its own clock', () => {
  /**
   * A test engine that first "gets its helper ready" (300 ms, as an engine host or LibreOffice
   * starting) and then works 100 ms, against a 200 ms limit: whether it succeeds depends only on
   * where the runner starts the clock.
   */
  function readyingEngine(startsClock: boolean): Engine {
    return {
      name: 'readying', startsClock,
      probe: async () => ({ name: 'readying', available: true }),
      pairs: () => [{ source: 'txt', target: 'csv', engine: 'readying', kind: 'data', options: [], variants: [] }],
      formats: () => [{ key: 'txt', extensions: ['txt'], mime: 'text/plain' }, { key: 'csv', extensions: ['csv'], mime: 'text/csv' }],
      async convert(job) {
        await sleep(300);
        job.signal.throwIfAborted();
        job.startClock?.();
        await sleep(100);
        job.signal.throwIfAborted();
        await writeFile(job.outputPath, 'a\n1\n');
      },
    };
  }

  for (const startsClock of [true, false]) {
    it(startsClock ? 'the time to get ready is not counted: it succeeds' : 'without startsClock the wait counts: it times out', async () => {
      const system = await openSystem({
        dataDir: join(dir, `clock-${startsClock}`),
        config: defaultServiceConfig({ engineTimeoutMs: { readying: 200 } }),
        workers: 1,
        engines: [readyingEngine(startsClock)],
        ephemeralStore: true,
      });
      try {
        await system.start();
        const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'clock' });
        const path = system.blobs.spoolPath();
        await writeFile(path, 'x');
        const created = await system.conversions.create(owner, { fields: { target: 'csv' }, options: {}, files: [{ path, size: 1, sha256: '', filename: 'a.txt' }] });
        const ended = await system.conversions.waitForEnd(created.record, 10);
        if (startsClock) assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
        else assert.deepEqual([ended.status, ended.error?.code], ['failed', 'timeout']);
      } finally {
        await system.stop();
      }
    });
  }
});
