/**
 * An end state is told (a `wait` answered, webhooks and metrics' subscribers called) only once it
 * is on disk: what a waiter is told, a kill -9 a moment later does not undo. A submission with
 * `wait` that ends within it is written once, start and end together.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { decodeCopy } from '../../src/store/durable-json-file.ts';
import { openTempSystem, type TempSystem } from '../helpers/temp-system.ts';

/** The record as the store's files hold it now, read without yielding (no write can land meanwhile). */
function onDiskNow(dataDir: string, id: string): ConversionRecord | undefined {
  const dir = join(dataDir, 'store', 'conversions');
  let newest: { seq: number; record: ConversionRecord } | undefined;
  for (const name of readdirSync(dir)) {
    const copy = decodeCopy<{ conversions: ConversionRecord[] }>(readFileSync(join(dir, name)));
    if (!copy.valid) continue;
    const record = copy.data.conversions.find((candidate) => candidate.id === id);
    if (record && (!newest || copy.seq > newest.seq)) newest = { seq: copy.seq, record };
  }
  return newest?.record;
}

/** Each shard's newest write (its seq) and what its copies hold of conversion `id`. */
function shardWrites(dataDir: string, id?: string): { seqs: Map<string, number>; base?: string; copies: ConversionRecord[] } {
  const dir = join(dataDir, 'store', 'conversions');
  const seqs = new Map<string, number>();
  let base: string | undefined;
  const copies: ConversionRecord[] = [];
  for (const name of readdirSync(dir)) {
    const copy = decodeCopy<{ conversions: ConversionRecord[] }>(readFileSync(join(dir, name)));
    if (!copy.valid) continue;
    const shard = name.split('.')[0]!;
    seqs.set(shard, Math.max(seqs.get(shard) ?? 0, copy.seq));
    const record = id === undefined ? undefined : copy.data.conversions.find((candidate) => candidate.id === id);
    if (record) {
      base = shard;
      copies.push(record);
    }
  }
  return { seqs, base, copies };
}

describe('an end state told only once it is on disk', () => {
  let opened: TempSystem;
  let system: ConversionSystem;
  let dataDir: string;
  before(async () => {
    opened = await openTempSystem('convd-end-on-disk-', { engines: [createImageEngine({ maxInputPixels: 100_000_000 })] });
    ({ system, dataDir } = opened);
    await system.start();
  });
  after(() => opened.close());

  it('a wait that ends finds the success in the store files the moment it is answered', async () => {
    const account = await system.accounts.createAccount({ plan: 'unmetered', name: 'disk' });
    for (let round = 0; round < 5; round++) {
      const png = await sharp({ create: { width: 40 + round, height: 30, channels: 3, background: '#336699' } }).png().toBuffer();
      const path = system.blobs.spoolPath();
      await writeFile(path, png);
      const file = { path, size: png.length, sha256: '', filename: `photo-${round}.png`, head: png.subarray(0, 64 * 1024) };
      const { record } = await system.conversions.create(account, { fields: { target: 'webp' }, options: {}, files: [file] });
      const ended = await system.conversions.waitForEnd(record, 30);
      assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
      assert.equal(onDiskNow(dataDir, record.id)?.status, 'succeeded', 'on disk when the waiter is told');
    }
  });

  it('a submission with wait that ends within it is written once, and its upload never reaches the disk', async () => {
    const account = await system.accounts.createAccount({ plan: 'unmetered', name: 'once' });
    // The deferred writes of the conversions before (their uploads' second copies) are done: a
    // round's shard is written by nothing but its own conversion.
    await sleep(1100);
    for (let round = 0; round < 3; round++) {
      const png = await sharp({ create: { width: 20 + round, height: 20, channels: 3, background: '#996633' } }).png().toBuffer();
      const before = shardWrites(dataDir).seqs;
      // As the HTTP face holds a small upload: in memory, nothing at its path.
      const file = { path: system.blobs.spoolPath(), size: png.length, sha256: '', filename: `small-${round}.png`, head: png, inMemory: true };
      const outcome = await system.conversions.create(account, { fields: { target: 'webp', wait: 30 }, options: {}, files: [file] });
      assert.ok(outcome.record.input_bytes, 'a small PNG travels in its record');
      const answered = await system.conversions.answer(outcome);
      assert.equal(answered.status, 'succeeded', JSON.stringify(answered.error));
      const after = shardWrites(dataDir, answered.id);
      assert.ok(after.base, 'on disk when answered');
      assert.equal(after.seqs.get(after.base), (before.get(after.base) ?? 0) + 1, 'one write of its shard: start and end together');
      // The copy written before holds nothing of it: no second write comes for its upload.
      await sleep(1300);
      const later = shardWrites(dataDir, answered.id);
      assert.equal(later.seqs.get(after.base), after.seqs.get(after.base), 'no later write of its shard');
      assert.deepEqual(later.copies.map((record) => [record.status, record.input_bytes]), [['succeeded', undefined]]);
    }
  });
});
