/**
 * A conversion's start is on disk before its engine runs: a daemon that dies a moment into the
 * engine (a crashing decoder) is found `processing` at its next start and counted as interrupted,
 * so that a conversion that kills it cannot be run again and again (the crash-loop rule). A
 * submission with `wait` is in no file until its end or its wait's end (then on disk before the
 * answer), unless its deferred write came first: a crash before loses it, nothing runs it again.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Engine } from '../../src/engines/types.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../../src/service/system.ts';
import { decodeCopy } from '../../src/store/durable-json-file.ts';

let dir: string;
let system: ConversionSystem;
/** What the store's files on disk said about each conversion when the engine was called. */
const onDiskAtStart = new Map<string, string | undefined>();
/** Each conversion's id by its input's text: what the engine is given names neither. */
const idByInput = new Map<string, string>();

/** The status of conversion `id` in the newest whole copy of the store's files on disk. */
async function statusOnDisk(storeDir: string, id: string): Promise<string | undefined> {
  let best: { seq: number; status: string } | undefined;
  for (const entry of await readdir(storeDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
    const bytes = await readFile(join(entry.parentPath, entry.name));
    if (bytes.length === 0) continue;
    const copy = decodeCopy<{ conversions?: ConversionRecord[] }>(bytes);
    const record = copy.valid ? copy.data.conversions?.find((c) => c.id === id) : undefined;
    if (copy.valid && record && (!best || copy.seq > best.seq)) best = { seq: copy.seq, status: record.status };
  }
  return best?.status;
}

/** An engine that only looks at the disk when it is called, then writes a result. */
const looking: Engine = {
  name: 'looking',
  probe: async () => ({ name: 'looking', available: true }),
  pairs: () => [{ source: 'txt', target: 'csv', engine: 'looking', kind: 'data', options: [], variants: [] }],
  formats: () => [{ key: 'txt', extensions: ['txt'], mime: 'text/plain' }, { key: 'csv', extensions: ['csv'], mime: 'text/csv' }],
  async convert(job) {
    const text = await readFile(job.inputPath, 'utf8');
    // The submission's answer may come a moment after its run starts.
    while (!idByInput.has(text)) await new Promise((resolve) => setTimeout(resolve, 1));
    const id = idByInput.get(text)!;
    onDiskAtStart.set(id, await statusOnDisk(join(dir, 'data', 'store'), id));
    // Long enough for the next conversion's submission to be on disk well before it starts; one
    // named slow outlasts a wait of a second, and the store's deferred writes (a second).
    await new Promise((resolve) => setTimeout(resolve, text.startsWith('slow') ? 1500 : 300));
    await writeFile(job.outputPath, 'a\n');
  },
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-durable-start-'));
  system = await openSystem({ dataDir: join(dir, 'data'), config: defaultServiceConfig(), workers: 1, engines: [looking] });
  await system.start();
});
after(async () => {
  await system.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('the start of a conversion', () => {
  it('is on disk as processing before its engine is called, also when it waited in the queue', async () => {
    const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'durable' });
    const submit = async (text: string) => (await submitText(owner, text)).record;
    // One worker: the second waits for the first, and starts long after its submission was written.
    const [first, second] = [await submit('first'), await submit('second')];
    for (const record of [first, second]) {
      const ended = await system.conversions.waitForEnd(record, 10);
      assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
      assert.equal(onDiskAtStart.get(record.id), 'processing', `${record.id} on disk when its engine began`);
    }
  });

  it('with wait: in no file until its end, written once with it', async () => {
    // The store's deferred writes (of the conversions before) are done: none comes during this one.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'waiting' });
    const outcome = await submitText(owner, 'quick with wait', 30);
    const answered = await system.conversions.answer(outcome);
    assert.equal(answered.status, 'succeeded', JSON.stringify(answered.error));
    assert.equal(onDiskAtStart.get(answered.id), undefined, 'in no file when its engine began');
    assert.equal(await statusOnDisk(join(dir, 'data', 'store'), answered.id), 'succeeded');
  });

  it('with wait that runs out: on disk before it is answered', async () => {
    const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'impatient' });
    const outcome = await submitText(owner, 'slow, wait 1', 1);
    // The wait's end comes now (the client went away), long before the store's deferred write.
    const answered = await system.conversions.answer(outcome, AbortSignal.abort());
    assert.ok(['queued', 'processing'].includes(answered.status), answered.status);
    assert.ok(['queued', 'processing'].includes((await statusOnDisk(join(dir, 'data', 'store'), answered.id))!), 'on disk when answered 202');
    assert.equal((await system.conversions.waitForEnd(answered, 10)).status, 'succeeded');
  });

  it('a replay is answered once what the store holds of the original is on disk', async () => {
    const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'replayed' });
    // Each request's upload is a spool file of its own (the original's is moved into the store).
    const request = async () => {
      const path = system.blobs.spoolPath();
      await writeFile(path, 'slow, replayed');
      return { fields: { target: 'csv', wait: 30 }, options: {}, files: [{ path, size: 14, sha256: 'same', filename: 'a.txt' }], idempotencyKey: 'once' };
    };
    const original = await system.conversions.create(owner, await request());
    idByInput.set('slow, replayed', original.record.id);
    const replay = await system.conversions.create(owner, { ...(await request()), fields: { target: 'csv' } });
    assert.equal(replay.replayed, true);
    const answered = await system.conversions.answer(replay);
    assert.equal(answered.id, original.record.id);
    assert.ok(['queued', 'processing'].includes((await statusOnDisk(join(dir, 'data', 'store'), answered.id))!), 'on disk when the replay is answered');
    assert.equal((await system.conversions.answer(original)).status, 'succeeded');
  });

  it('with wait, written while it waited in the queue: on disk as processing before its engine runs', async () => {
    const owner = await system.accounts.createAccount({ plan: 'unmetered', name: 'queued' });
    // One worker: the second waits 1.5 s for the first, past the store's deferred write.
    const first = await submitText(owner, 'slow, first in line');
    const second = await submitText(owner, 'second in line, with wait', 30);
    const answered = await system.conversions.answer(second);
    assert.equal(answered.status, 'succeeded', JSON.stringify(answered.error));
    assert.equal(onDiskAtStart.get(answered.id), 'processing', 'on disk when its engine began');
    assert.equal((await system.conversions.waitForEnd(first.record, 10)).status, 'succeeded');
  });
});

async function submitText(owner: Awaited<ReturnType<ConversionSystem['accounts']['createAccount']>>, text: string, wait = 0) {
  const path = system.blobs.spoolPath();
  await writeFile(path, text);
  const outcome = await system.conversions.create(owner, { fields: { target: 'csv', ...(wait > 0 ? { wait } : {}) }, options: {}, files: [{ path, size: text.length, sha256: '', filename: 'a.txt' }] });
  idByInput.set(text, outcome.record.id);
  return outcome;
}
