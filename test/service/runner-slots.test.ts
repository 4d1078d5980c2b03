/**
 * Workers give their slot back when the engine ends (the result is filed meanwhile by the job
 * that produced it): with the real image engine, counted from outside, no more engine runs than
 * workers ever overlap, whichever way a run ends, and every conversion reaches its end state.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import type { Engine } from '../../src/engines/types.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { waitUntil } from '../helpers/ops-support.ts';

const WORKERS = 2;
let dir: string;
let system: ConversionSystem;
let account: AccountRecord;
const runs = { now: 0, most: 0, total: 0 };
/** Whom each engine run was for (EngineJob.tenant): the HTML engine's account reuse keys its pages by it. */
const tenants: (string | undefined)[] = [];

/** The real image engine, its runs counted as they overlap. */
function counted(engine: Engine): Engine {
  return {
    name: engine.name,
    probe: () => engine.probe(),
    pairs: () => engine.pairs(),
    formats: () => engine.formats(),
    async convert(job) {
      tenants.push(job.tenant);
      runs.now += 1;
      runs.total += 1;
      runs.most = Math.max(runs.most, runs.now);
      try {
        return await engine.convert(job);
      } finally {
        runs.now -= 1;
      }
    },
  };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-runner-slots-'));
  await sharp({ create: { width: 900, height: 700, channels: 3, background: '#2a6' } }).png().toFile(join(dir, 'good.png'));
  // Big enough to be caught running: the one cancelled mid-run.
  await sharp({ create: { width: 3000, height: 3000, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 30 } } }).png({ compressionLevel: 1 }).toFile(join(dir, 'slow.png'));
  await writeFile(join(dir, 'corrupt.png'), Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(200, 7)]));
  system = await openSystem({
    dataDir: join(dir, 'data'),
    config: defaultServiceConfig(),
    workers: WORKERS,
    engines: [counted(createImageEngine({ maxInputPixels: 100_000_000 }))],
    ephemeralStore: true,
  });
  await system.start();
  account = await system.accounts.createAccount({ plan: 'unmetered', name: 'slots' });
});
after(async () => {
  await system.stop();
  await rm(dir, { recursive: true, force: true });
});

async function submit(file: string): Promise<string> {
  const path = system.blobs.spoolPath();
  await copyFile(join(dir, file), path);
  const outcome = await system.conversions.create(account, {
    fields: { target: 'webp' }, options: {}, files: [{ path, size: 0, sha256: '', filename: file }],
  });
  return outcome.record.id;
}

describe('worker slots', () => {
  it('never overlap more engine runs than workers, through successes, failures and a cancel', async () => {
    const files = ['good.png', 'slow.png', 'corrupt.png', 'good.png', 'good.png', 'corrupt.png', 'good.png', 'good.png', 'good.png', 'good.png'];
    const ids: string[] = [];
    for (const file of files) ids.push(await submit(file));
    await waitUntil('the slow one to run', async () => ((await system.store.getConversion(ids[1]!))?.status === 'processing' ? true : undefined), 10_000);
    await system.conversions.delete(account, ids[1]!);
    const ended = await waitUntil('every conversion to end', async () => {
      const records = await Promise.all(ids.map((id) => system.store.getConversion(id)));
      return records.every((r) => r && ['succeeded', 'failed', 'cancelled'].includes(r.status)) ? records : undefined;
    }, 30_000);
    assert.equal(runs.most, WORKERS, `at most ${WORKERS} runs at once, and that many were reached`);
    assert.equal(runs.now, 0);
    for (const [index, record] of ended.entries()) {
      if (index === 1) assert.equal(record!.status, 'cancelled');
      else if (files[index] === 'corrupt.png') assert.deepEqual([record!.status, record!.error?.code], ['failed', 'input_invalid']);
      else assert.equal(record!.status, 'succeeded', JSON.stringify(record!.error));
    }
    assert.equal(system.pool.active, 0, 'no job left holding anything');
    assert.ok(tenants.length > 0 && tenants.every((tenant) => tenant === account.id), `every run was told its account: ${JSON.stringify(tenants)}`);
  });
});
