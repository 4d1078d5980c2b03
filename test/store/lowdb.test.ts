/**
 * LowdbStore on its own, against real files: its in-memory indexes are rebuilt from disk after a
 * reopen, pagination by `before` is newest first and stable under inserts, idempotency keys are
 * scoped to an account and expire, pruning removes only what it may (on disk too), a write is
 * on disk once `flush()` resolves, and the web face's tokens outlive a restart (a main file
 * written before they existed opens with none).
 */
import assert from 'node:assert/strict';
import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { ConversionStatus } from '../../src/model/status.ts';
import { account, conversion, DAY, HOUR, webToken } from '../helpers/store-records.ts';
import { DirectorySync } from '../../src/store/directory-sync.ts';
import { decodeCopy, DurableJsonFile } from '../../src/store/durable-json-file.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { DEFAULT_SETTINGS, type WebTokenRecord } from '../../src/store/types.ts';

/** The data of the newest whole copy of a store file (`<base>.a.json` / `<base>.b.json`), read straight from disk. */
async function newestCopy<T>(base: string): Promise<{ seq: number; data: T } | null> {
  let newest: { seq: number; data: T } | null = null;
  for (const path of DurableJsonFile.paths(base)) {
    const bytes = await readFile(path).catch(() => null);
    if (!bytes) continue;
    const copy = decodeCopy<T>(bytes);
    if (copy.valid && (!newest || copy.seq > newest.seq)) newest = copy;
  }
  return newest;
}

/** Every conversion on disk, read straight from the shard files (not through the store). */
async function conversionsOnDisk(dir: string): Promise<Map<string, ConversionRecord>> {
  const shardDir = join(dir, 'conversions');
  const bases = new Set((await readdir(shardDir)).map((name) => /^([0-9a-f]+)\.[ab]\.json$/.exec(name)?.[1]).filter((base) => base !== undefined));
  const found = new Map<string, ConversionRecord>();
  for (const base of bases) {
    const shard = await newestCopy<{ conversions: ConversionRecord[] }>(join(shardDir, base));
    for (const record of shard?.data.conversions ?? []) found.set(record.id, record);
  }
  return found;
}

/** How many conversion records the shard files hold, duplicates counted. */
async function recordsOnDisk(dir: string): Promise<number> {
  const shardDir = join(dir, 'conversions');
  const bases = new Set((await readdir(shardDir)).map((name) => /^([0-9a-f]+)\.[ab]\.json$/.exec(name)?.[1]).filter((base) => base !== undefined));
  let count = 0;
  for (const base of bases) count += (await newestCopy<{ conversions: unknown[] }>(join(shardDir, base)))?.data.conversions.length ?? 0;
  return count;
}

/** What `work` returns, and how many fsyncs (FileHandle.sync: directories here, copies use O_DSYNC) it made. */
async function countingSyncs<T>(dir: string, work: () => Promise<T>): Promise<{ result: T; syncs: number }> {
  const probe = await open(dir, 'r');
  const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
  await probe.close();
  const realSync = proto.sync;
  let syncs = 0;
  proto.sync = async function (this: unknown) {
    syncs++;
    return realSync.call(this);
  };
  try {
    return { result: await work(), syncs };
  } finally {
    proto.sync = realSync;
  }
}

const ids = (records: { id: string }[]) => records.map((r) => r.id);

describe('LowdbStore', () => {
  let dir: string;
  let store: LowdbStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-store-'));
    // Few shards, so that several conversions share a file as they do in a large store.
    store = await LowdbStore.open({ dir, shards: 4 });
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('rebuilds every index from disk after a reopen', async () => {
    const now = Date.now();
    const expiresSoon = new Date(now - 1000).toISOString();
    const records = [
      conversion('acc_a', { status: 'succeeded', credits: 2, reserved_credits: 0, charged_at: new Date(now - HOUR).toISOString(), finished_at: new Date(now - HOUR).toISOString(),
        result: { filename: 'photo.webp', size: 10, mime: 'image/webp', expires_at: expiresSoon } }),
      conversion('acc_a', { status: 'processing', reserved_credits: 3, idempotency_key: 'key-1', request_fingerprint: 'fp-1' }),
      conversion('acc_a', { status: 'queued', reserved_credits: 1 }),
      conversion('acc_a', { status: 'failed', reserved_credits: 0, finished_at: new Date(now).toISOString(), error: { code: 'input_invalid', message: 'no' } }),
      conversion('acc_b', { status: 'fetching', reserved_credits: 4, input: { kind: 'url', url: 'https://example.com/a.png' }, idempotency_key: 'key-1', request_fingerprint: 'fp-b' }),
    ];
    for (const record of records) await store.insertConversion(record);
    // An update after the insert must be what survives, not the inserted version.
    await store.updateConversion(records[2]!.id, { status: 'cancelled', reserved_credits: 0, finished_at: new Date(now).toISOString() });
    await store.putAccount(account('acc_a', new Date(now - 5 * DAY).toISOString()));
    await store.close();

    store = await LowdbStore.open({ dir, shards: 4 });
    assert.deepEqual(await store.getConversion(records[0]!.id), records[0]);
    assert.equal((await store.getConversion(records[2]!.id))?.status, 'cancelled');
    assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_a', limit: 10 })), ids(records.slice(0, 4)).reverse());
    assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_b', limit: 10 })), [records[4]!.id]);
    assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_a', status: 'failed', limit: 10 })), [records[3]!.id]);
    assert.equal(await store.countActive('acc_a'), 1, 'processing only: the queued one was cancelled');
    assert.equal(await store.countActive('acc_b'), 1);
    assert.deepEqual(await store.creditSums('acc_a', new Date(now - 5 * DAY).toISOString()), { charged: 2, reserved: 3 });
    assert.equal((await store.findByIdempotencyKey('acc_a', 'key-1'))?.id, records[1]!.id);
    assert.equal((await store.findByIdempotencyKey('acc_b', 'key-1'))?.id, records[4]!.id);
    assert.deepEqual(ids(await store.conversionsWithStatus(['processing', 'fetching'])), [records[1]!.id, records[4]!.id]);
    assert.deepEqual(ids(await store.conversionsExpiringBy(new Date(now).toISOString())), [records[0]!.id]);
    assert.equal((await store.getAccount('acc_a'))?.credits_base, 1000);
  });

  it('pages newest first by `before`, unaffected by inserts between pages', async () => {
    const inserted: string[] = [];
    for (let i = 0; i < 45; i++) {
      const record = conversion('acc_a', { status: i % 3 === 0 ? 'failed' : 'succeeded' });
      inserted.push(record.id);
      await store.insertConversion(record);
      // Another account's conversions interleave and must never show up.
      await store.insertConversion(conversion('acc_other'));
    }
    const newestFirst = [...inserted].reverse();
    const pages: string[][] = [];
    let before: string | undefined;
    for (;;) {
      const page = ids(await store.listConversions({ accountId: 'acc_a', before, limit: 20 }));
      if (page.length === 0) break;
      pages.push(page);
      before = page[page.length - 1];
      // Newer conversions arriving while a client pages must not shift the pages it has yet to read.
      await store.insertConversion(conversion('acc_a'));
    }
    assert.deepEqual(pages.map((p) => p.length), [20, 20, 5]);
    assert.deepEqual(pages.flat(), newestFirst);

    const failed = ids(await store.listConversions({ accountId: 'acc_a', status: 'failed', limit: 100 }));
    assert.equal(failed.length, 15);
    const olderFailed = ids(await store.listConversions({ accountId: 'acc_a', status: 'failed', before: failed[4], limit: 100 }));
    assert.deepEqual(olderFailed, failed.slice(5));
    assert.deepEqual(await store.listConversions({ accountId: 'acc_nobody', limit: 20 }), []);
  });

  it('finds idempotency keys per account and forgets them after 24 hours', async () => {
    const fresh = conversion('acc_a', { idempotency_key: 'same', request_fingerprint: 'fp-a', created_at: new Date(Date.now() - HOUR).toISOString() });
    const old = conversion('acc_b', { idempotency_key: 'same', request_fingerprint: 'fp-b', created_at: new Date(Date.now() - 25 * HOUR).toISOString() });
    await store.insertConversion(fresh);
    await store.insertConversion(old);
    assert.equal((await store.findByIdempotencyKey('acc_a', 'same'))?.id, fresh.id);
    assert.equal((await store.findByIdempotencyKey('acc_a', 'same'))?.request_fingerprint, 'fp-a');
    assert.equal(await store.findByIdempotencyKey('acc_b', 'same'), undefined, 'older than 24 h');
    assert.equal(await store.findByIdempotencyKey('acc_c', 'same'), undefined, 'another account');
    assert.equal(await store.findByIdempotencyKey('acc_a', 'other'), undefined);
  });

  it('prunes only ended history outside the credit period, from memory and from disk', async () => {
    const now = Date.now();
    const periodStart = new Date(now - 10 * DAY).toISOString();
    const cutoff = new Date(now - 2 * DAY).toISOString();
    const before = new Date(now - 20 * DAY).toISOString();
    const inPeriod = new Date(now - 5 * DAY).toISOString();
    await store.putAccount(account('acc_a', periodStart));
    const ended = (status: ConversionStatus, finishedAt: string, extra: Partial<ConversionRecord> = {}) =>
      conversion('acc_a', { status, reserved_credits: 0, finished_at: finishedAt, created_at: finishedAt, ...extra });
    const doomed = [
      ended('failed', before),
      ended('cancelled', before),
      ended('expired', before, { credits: 1, charged_at: before }),
    ];
    const kept = [
      ended('expired', inPeriod, { credits: 1, charged_at: inPeriod }), // charged in this period: part of the balance
      ended('failed', new Date(now - DAY).toISOString()), // finished after the cutoff
      ended('succeeded', before), // a result still held is never pruned here (the sweeper expires it)
      conversion('acc_a', { status: 'queued', created_at: before }),
    ];
    for (const record of [...doomed, ...kept]) await store.insertConversion(record);
    await store.flush();

    assert.equal(await store.pruneFinishedBefore(cutoff), doomed.length);
    for (const record of doomed) assert.equal(await store.getConversion(record.id), undefined);
    for (const record of kept) assert.ok(await store.getConversion(record.id), `${record.status} kept`);
    assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_a', limit: 100 })).sort(), ids(kept).sort());
    assert.equal((await store.creditSums('acc_a', periodStart)).charged, 1);
    assert.equal(await store.pruneFinishedBefore(cutoff), 0, 'a second prune finds nothing');

    await store.flush();
    const disk = await conversionsOnDisk(dir);
    assert.deepEqual([...disk.keys()].sort(), ids(kept).sort());
    await store.close();
    store = await LowdbStore.open({ dir, shards: 4 });
    assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_a', limit: 100 })).sort(), ids(kept).sort());
  });

  it('has a write on disk once flush() resolves', async () => {
    const record = conversion('acc_a');
    await store.insertConversion(record);
    await store.flush();
    assert.deepEqual((await conversionsOnDisk(dir)).get(record.id), record);

    await store.updateConversion(record.id, { status: 'processing', progress: 40 });
    await store.putSettings({ maintenance: { enabled: true, retry_after: 60 } });
    await store.flush();
    const onDisk = (await conversionsOnDisk(dir)).get(record.id);
    assert.equal(onDisk?.status, 'processing');
    assert.equal(onDisk?.progress, 40);
    const main = await newestCopy<{ settings: { maintenance: { enabled: boolean } } }>(join(dir, 'main'));
    assert.equal(main?.data.settings.maintenance.enabled, true);
    // Written in place: the two copies of each file and nothing else (no temp files).
    for (const name of await readdir(join(dir, 'conversions'))) assert.match(name, /^[0-9a-f]{3}\.[ab]\.json$/);
  });

  it('coalesces many writes into one flush per file and keeps them all', async () => {
    const records = Array.from({ length: 200 }, () => conversion('acc_a'));
    // No await between the calls: they all land in the same coalescing window.
    await Promise.all(records.map((record) => store.insertConversion(record)));
    await Promise.all(records.map((record, i) => store.updateConversion(record.id, { progress: i % 100 })));
    await store.flush();
    const disk = await conversionsOnDisk(dir);
    assert.equal(disk.size, 200);
    records.forEach((record, i) => assert.equal(disk.get(record.id)?.progress, i % 100));
  });

  it('writes a shard as JSON.stringify would, records changed since the last write and those not alike', async () => {
    const records = Array.from({ length: 40 }, () => conversion('acc_a'));
    for (const record of records) await store.insertConversion(record);
    await store.flush();
    // One record at a time changes, its shard written after each: every other record of the
    // shard is written from what was kept of the write before.
    for (const [index, record] of records.entries()) {
      if (index % 7 !== 0) continue;
      await store.updateConversion(record.id, { status: 'processing', progress: index, result: null });
      await store.flush();
      const disk = await conversionsOnDisk(dir);
      for (const other of records) assert.deepEqual(disk.get(other.id), await store.getConversion(other.id));
    }
    for (let shard = 0; shard < 4; shard++) {
      const base = join(dir, 'conversions', shard.toString(16).padStart(3, '0'));
      const newest = await newestCopy<{ conversions: ConversionRecord[] }>(base);
      if (!newest) continue;
      const bytes = await Promise.all(DurableJsonFile.paths(base).map((path) => readFile(path, 'utf8').catch(() => '')));
      const written = bytes.find((copy) => copy.startsWith(`{"seq":${newest.seq},`))!;
      assert.equal(written.slice(written.indexOf('"data":') + 7, -1), JSON.stringify(newest.data));
    }
  });

  it('keeps an upload held in a record, and a password, off both copies of its file soon after the end drops them', async () => {
    const upload = Buffer.from('the bytes of a small upload, kept in the record while it waits').toString('base64');
    const record = conversion('acc_a', { input_bytes: upload, secret_options: { password: 'pw-Zq81-secret' } });
    await store.insertConversion(record);
    await store.flush();
    await store.updateConversion(record.id, { status: 'processing', progress: 0 });
    await store.flush();
    const shardFiles = async () => {
      const names = await readdir(join(dir, 'conversions'));
      return Promise.all(names.map(async (name) => (await readFile(join(dir, 'conversions', name), 'utf8').catch(() => ''))));
    };
    assert.ok((await shardFiles()).filter((copy) => copy.includes(upload)).length >= 1);
    await store.updateConversion(record.id, { status: 'succeeded', progress: 100, input_bytes: undefined, secret_options: undefined });
    await store.flush();
    assert.equal((await conversionsOnDisk(dir)).get(record.id)?.input_bytes, undefined, 'the newest copy is without it at once');
    // The other copy is written within a second (DEFERRED_FLUSH_MS), with no other change to the store.
    const deadline = Date.now() + 3000;
    const holding = async () => (await shardFiles()).filter((copy) => copy.includes(upload) || copy.includes('pw-Zq81-secret'));
    while ((await holding()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await holding(), [], 'no copy holds the upload or the password');
    assert.equal((await conversionsOnDisk(dir)).get(record.id)?.status, 'succeeded');
  });

  it('writes both copies free of a dropped upload when it closes at once after the drop', async () => {
    const upload = Buffer.from('a small upload still in its record as the daemon stops').toString('base64');
    const record = conversion('acc_a', { input_bytes: upload });
    await store.insertConversion(record);
    await store.flush();
    await store.updateConversion(record.id, { status: 'processing', progress: 0 });
    await store.flush();
    await store.updateConversion(record.id, { status: 'succeeded', progress: 100, input_bytes: undefined });
    // No flush: close() writes what is pending, then the copy the end's write did not reach.
    await store.close();
    const names = await readdir(join(dir, 'conversions'));
    const copies = await Promise.all(names.map((name) => readFile(join(dir, 'conversions', name), 'utf8')));
    assert.deepEqual(copies.filter((copy) => copy.includes(upload)), []);
    store = await LowdbStore.open({ dir, shards: 4 });
    assert.equal((await store.getConversion(record.id))?.status, 'succeeded');
  });

  it('redistributes conversions when the shard count changes, leaving no stray files', async () => {
    await store.close();
    const small = await LowdbStore.open({ dir, shards: 4 });
    const records = Array.from({ length: 50 }, () => conversion('acc_a'));
    for (const record of records) await small.insertConversion(record);
    await small.close();
    for (const name of await readdir(join(dir, 'conversions'))) assert.match(name, /^00[0-3]\.[ab]\.json$/);

    store = await LowdbStore.open({ dir, shards: 16 });
    const files = await readdir(join(dir, 'conversions'));
    // A shard with nothing in it has no file yet; every file is one of the sixteen.
    assert.ok(files.length > 4, `the conversions were spread over more files: ${files.join(' ')}`);
    for (const name of files) assert.ok(parseInt(name, 16) < 16 && /^[0-9a-f]{3}\.[ab]\.json$/.test(name), `unexpected file ${name}`);
    const disk = await conversionsOnDisk(dir);
    assert.equal(disk.size, 50, 'every conversion is on disk exactly once after the move');
    for (const record of records) assert.equal((await store.getConversion(record.id))?.id, record.id);
    const page = await store.listConversions({ accountId: 'acc_a', limit: 100 });
    assert.deepEqual(page.map((r) => r.id), records.map((r) => r.id).reverse());

    // And back to fewer shards: files past the new count are gone, nothing is lost.
    await store.close();
    store = await LowdbStore.open({ dir, shards: 4 });
    const after = await readdir(join(dir, 'conversions'));
    for (const name of after) assert.ok(parseInt(name, 16) < 4, `stray file ${name} left behind`);
    assert.equal((await conversionsOnDisk(dir)).size, 50);
    assert.equal(await recordsOnDisk(dir), 50, 'no conversion left behind in a file it moved out of');
    await store.close();
    store = await LowdbStore.open({ dir, shards: 4 });
    assert.equal((await store.listConversions({ accountId: 'acc_a', limit: 100 })).length, 50, 'listed once each after another start');
  });

  it('reads the previous copy when the newest was torn by a crash, and overwrites the torn one next', async () => {
    const record = conversion('acc_a');
    await store.insertConversion(record);
    await store.flush();
    await store.updateConversion(record.id, { status: 'processing', progress: 10 });
    await store.flush();
    await store.close();
    // The copy with `processing` is the newer one: cut it in the middle, as a crash mid-write would.
    const base = join(dir, 'conversions', (await readdir(join(dir, 'conversions')))[0]!.slice(0, 3));
    const copies = await Promise.all(DurableJsonFile.paths(base).map(async (path) => ({ path, copy: decodeCopy<unknown>(await readFile(path)) })));
    const newer = copies.reduce((a, b) => ((b.copy.valid ? b.copy.seq : -1) > (a.copy.valid ? a.copy.seq : -1) ? b : a));
    const older = copies.find((c) => c !== newer)!;
    const before = await readFile(older.path);
    await truncate(newer.path, (await readFile(newer.path)).length - 20);

    store = await LowdbStore.open({ dir, shards: 4 });
    assert.equal((await store.getConversion(record.id))?.status, 'queued', 'the state before the torn write');
    await store.updateConversion(record.id, { status: 'processing', progress: 20 });
    await store.flush();
    assert.deepEqual(await readFile(older.path), before, 'the whole copy was not the one overwritten');
    assert.equal(decodeCopy(await readFile(newer.path)).valid, true);
    assert.equal((await conversionsOnDisk(dir)).get(record.id)?.progress, 20);
  });

  it('keeps web tokens across a close and reopen; taken, deleted and pruned ones stay gone', async () => {
    const session = webToken('acc_a', 'session');
    const link = webToken('acc_a', 'login_link');
    const signedOut = webToken('acc_b', 'session');
    const expired = webToken('acc_b', 'login_link', { expires_at: new Date(Date.now() - HOUR).toISOString() });
    for (const token of [session, link, signedOut, expired]) await store.putWebToken(token);
    await store.flush();
    const main = await newestCopy<{ web_tokens: WebTokenRecord[] }>(join(dir, 'main'));
    assert.equal(main?.data.web_tokens.length, 4, 'in the main file once flush() resolves');
    await store.close();

    store = await LowdbStore.open({ dir, shards: 4 });
    for (const token of [session, link, signedOut, expired]) assert.deepEqual(await store.getWebToken(token.hash), token);
    assert.deepEqual(await store.takeWebToken(link.hash), link);
    assert.equal(await store.deleteWebTokens('acc_b', 'session'), 1);
    assert.equal(await store.pruneWebTokens(new Date().toISOString()), 1);
    await store.close();

    store = await LowdbStore.open({ dir, shards: 4 });
    assert.deepEqual(await store.getWebToken(session.hash), session);
    for (const token of [link, signedOut, expired]) assert.equal(await store.getWebToken(token.hash), undefined);
    assert.equal(await store.takeWebToken(link.hash), undefined, 'a link taken before the restart stays taken');
  });

  it('opens a main file written before web tokens existed, with none, and keeps them from then on', async () => {
    await store.close();
    const old = await mkdtemp(join(tmpdir(), 'convd-store-old-'));
    try {
      // The main file as the previous release wrote it: no `web_tokens` collection.
      const file = new DurableJsonFile<unknown>(join(old, 'main'));
      await file.read();
      await file.write({ version: 1, accounts: [account('acc_a', new Date().toISOString())], keys: [], settings: structuredClone(DEFAULT_SETTINGS), deliveries: [] });
      await file.close();
      store = await LowdbStore.open({ dir: old, shards: 4 });
      assert.equal((await store.getAccount('acc_a'))?.id, 'acc_a');
      assert.equal(await store.getWebToken('0'.repeat(64)), undefined);
      assert.equal(await store.pruneWebTokens(new Date(Date.now() + DAY).toISOString()), 0);
      assert.equal(await store.deleteWebTokens('acc_a', 'session'), 0);
      const session = webToken('acc_a', 'session');
      await store.putWebToken(session);
      await store.close();
      store = await LowdbStore.open({ dir: old, shards: 4 });
      assert.deepEqual(await store.getWebToken(session.hash), session);
      assert.equal((await store.getAccount('acc_a'))?.id, 'acc_a');
    } finally {
      await store.close();
      await rm(old, { recursive: true, force: true });
      store = await LowdbStore.open({ dir, shards: 4 });
    }
  });

  it('refuses to open when no copy of a file is whole (that is damage, not a crash)', async () => {
    await store.insertConversion(conversion('acc_a'));
    await store.flush();
    await store.insertConversion(conversion('acc_a'));
    await store.flush();
    await store.close();
    for (const path of DurableJsonFile.paths(join(dir, 'main'))) await writeFile(path, '{"seq":1,"crc32":1,"data":{}}');
    await assert.rejects(LowdbStore.open({ dir, shards: 4 }), /no usable copy/);
    // A store of a dir of its own for afterEach to close, and that dir the one it removes.
    await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'convd-store-'));
    store = await LowdbStore.open({ dir, shards: 4 });
  });

  it('reads the older layout (main.json, one NNN.json per shard) and moves it to the two-copy files', async () => {
    await store.close();
    const old = await mkdtemp(join(tmpdir(), 'convd-store-old-'));
    const records = Array.from({ length: 30 }, () => conversion('acc_a'));
    await mkdir(join(old, 'conversions'));
    await writeFile(join(old, 'main.json'), JSON.stringify({
      version: 1, accounts: [account('acc_a', new Date().toISOString())], keys: [], deliveries: [],
      settings: { maintenance: { enabled: true, retry_after: 42 } },
    }));
    await writeFile(join(old, 'conversions', '000.json'), JSON.stringify({ conversions: records.slice(0, 20) }));
    await writeFile(join(old, 'conversions', '3ff.json'), JSON.stringify({ conversions: records.slice(20) }));
    // A temp file the old layout's writes could leave behind in a crash.
    await writeFile(join(old, 'conversions', '3ff.json.tmp'), '{"conversions":[');
    try {
      store = await LowdbStore.open({ dir: old });
      assert.equal((await store.getSettings()).maintenance.retry_after, 42);
      assert.equal((await store.getAccount('acc_a'))?.id, 'acc_a');
      for (const record of records) assert.equal((await store.getConversion(record.id))?.id, record.id);
      for (const name of await readdir(join(old, 'conversions'))) assert.match(name, /^[0-9a-f]{3}\.[ab]\.json$/, 'no file of the old layout left');
      assert.equal((await conversionsOnDisk(old)).size, 30);
      // main.json goes with the first write of the main file.
      await store.putSettings({ maintenance: { enabled: false, retry_after: 42 } });
      await store.flush();
      assert.equal((await readdir(old)).includes('main.json'), false);
      await store.close();
      store = await LowdbStore.open({ dir: old });
      assert.equal((await store.getSettings()).maintenance.enabled, false);
      assert.equal((await store.getAccount('acc_a'))?.id, 'acc_a');
    } finally {
      await store.close();
      await rm(old, { recursive: true, force: true });
      store = await LowdbStore.open({ dir });
    }
  });

  it("makes a shard's files with its first write, and removes the empty ones an earlier version made in advance", async () => {
    await store.close();
    await rm(join(dir, 'conversions'), { recursive: true, force: true });
    await mkdir(join(dir, 'conversions'), { recursive: true });
    // What earlier versions left: both copies of every shard, empty.
    for (const base of ['000', '001', '002', '003']) {
      for (const path of DurableJsonFile.paths(join(dir, 'conversions', base))) await writeFile(path, '');
    }
    store = await LowdbStore.open({ dir, shards: 4 });
    assert.deepEqual(await readdir(join(dir, 'conversions')), [], 'the empty copies are gone');
    const record = conversion('acc_a');
    await store.insertConversion(record);
    await store.flush();
    const names = await readdir(join(dir, 'conversions'));
    assert.ok(names.length >= 1 && names.length <= 2, `one shard's files: ${names.join(', ')}`);
    await store.close();
    store = await LowdbStore.open({ dir, shards: 4 });
    assert.equal((await store.getConversion(record.id))?.id, record.id);
    assert.equal((await conversionsOnDisk(dir)).size, 1);
  });

  it('with no dir, keeps everything in memory and writes no file (not even relative to the working dir)', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'convd-store-mem-'));
    const cwd = process.cwd();
    // A write to a path derived from a missing dir ('main.a.json', 'conversions/…') would land here.
    process.chdir(empty);
    const memory = await LowdbStore.open({ dir: null, shards: 4 });
    try {
      const record = conversion('acc_a');
      await memory.insertConversion(record);
      await memory.updateConversion(record.id, { status: 'processing', progress: 5 });
      await memory.putSettings({ maintenance: { enabled: true, retry_after: 9 } });
      await memory.flush();
      assert.equal((await memory.getConversion(record.id))?.progress, 5);
      assert.equal((await memory.getSettings()).maintenance.retry_after, 9);
      assert.deepEqual(ids(await memory.listConversions({ accountId: 'acc_a', limit: 10 })), [record.id]);
      await memory.close();
      assert.deepEqual(await readdir(empty), []);
    } finally {
      process.chdir(cwd);
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('a conversion left in two files by a move cut short is kept once, from the file it belongs to', async () => {
    await store.close();
    const small = await LowdbStore.open({ dir, shards: 4 });
    const records = Array.from({ length: 12 }, () => conversion('acc_a'));
    for (const record of records) await small.insertConversion(record);
    await small.close();
    const before = new Map<string, Buffer>();
    for (const name of await readdir(join(dir, 'conversions'))) before.set(name, await readFile(join(dir, 'conversions', name)));
    // Down to 2 shards, then the files of shards 2 and 3 put back: as if the daemon died after
    // writing the new places and before removing the old files.
    const two = await LowdbStore.open({ dir, shards: 2 });
    await two.close();
    for (const [name, bytes] of before) if (/^00[23]\./.test(name)) await writeFile(join(dir, 'conversions', name), bytes);
    store = await LowdbStore.open({ dir, shards: 2 });
    const listed = await store.listConversions({ accountId: 'acc_a', limit: 100 });
    assert.deepEqual(listed.map((r) => r.id).sort(), records.map((r) => r.id).sort(), 'each conversion once');
    assert.equal(await recordsOnDisk(dir), 12, 'and once on disk');
  });

  it('a flush that makes the files of several shards syncs their directory fewer times than it makes shards', async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir);
    store = await LowdbStore.open({ dir, shards: 16 });
    const records = Array.from({ length: 16 }, () => conversion('acc_a'));
    const { syncs } = await countingSyncs(dir, async () => {
      for (const record of records) await store.insertConversion(record);
      await store.flush();
    });
    const shards = new Set((await readdir(join(dir, 'conversions'))).map((name) => name.slice(0, 3)));
    assert.ok(shards.size >= 4, `several shards made (${shards.size})`);
    // Calls made while a sync runs share the next one: once or twice where creates are quick,
    // a few times where they are slow and finish in waves; never once a shard.
    assert.ok(syncs >= 1 && syncs < shards.size, `${shards.size} new shards, their directory synced ${syncs} times`);
    assert.equal((await conversionsOnDisk(dir)).size, 16);
    await store.close();
    store = await LowdbStore.open({ dir, shards: 16 });
    for (const record of records) assert.equal((await store.getConversion(record.id))?.id, record.id);
  });

  it('opening the store syncs its directories: names a dead process made are durable before anything is acknowledged', async () => {
    await store.close();
    const opened = await countingSyncs(dir, () => LowdbStore.open({ dir, shards: 4 }));
    store = opened.result;
    const syncs = opened.syncs;
    assert.ok(syncs >= 2, `the store's directory and its conversions directory synced (${syncs})`);
  });

  it('a first write whose directory sync fails returns only once its bytes are written (no part of it left running)', async () => {
    const base = join(dir, 'slow');
    const failing = new DirectorySync(dir);
    failing.sync = () => Promise.reject(Object.assign(new Error('directory sync failed'), { code: 'EIO' }));
    const file = new DurableJsonFile<{ n: number }>(base, null, undefined, failing);
    const probe = await open(dir, 'r');
    const proto = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => Promise<{ bytesWritten: number }> };
    await probe.close();
    const realWrite = proto.write;
    let written = false;
    proto.write = async function (this: unknown, ...args: unknown[]) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const result = await realWrite.apply(this, args);
      written = true;
      return result;
    };
    try {
      await assert.rejects(file.write({ n: 1 }), /directory sync failed/);
      assert.equal(written, true, 'the write had finished when the failure was returned');
    } finally {
      proto.write = realWrite;
    }
    await file.close();
  });

  it("a file's first write makes its other copy too, empty (one directory sync names both), which reads as never written", async () => {
    const base = join(dir, 'pair');
    const file = new DurableJsonFile<{ n: number }>(base);
    await file.write({ n: 1 });
    const [a, b] = DurableJsonFile.paths(base);
    assert.ok((await stat(a!)).size > 0);
    assert.equal((await stat(b!)).size, 0, 'the other copy is there, empty');
    assert.deepEqual(await new DurableJsonFile<{ n: number }>(base).read(), { n: 1 });
    await file.write({ n: 2 });
    await file.close();
    assert.ok((await stat(b!)).size > 0, 'the second write went to the other copy');
    assert.deepEqual(await new DurableJsonFile<{ n: number }>(base).read(), { n: 2 });
  });

  it('a torn very first write of a file is "never written", not damage (the store opens)', async () => {
    const base = join(dir, 'lonely');
    const file = new DurableJsonFile<{ n: number }>(base);
    await file.write({ n: 1 });
    await file.close();
    const [first] = DurableJsonFile.paths(base);
    await truncate(first!, 10);
    const again = new DurableJsonFile<{ n: number }>(base);
    assert.equal(await again.read(), null);
    await again.write({ n: 2 });
    await again.close();
    assert.deepEqual(await new DurableJsonFile<{ n: number }>(base).read(), { n: 2 });
  });

  it('a write that failed half-way is cut to size by the next one (no garbage tail spoils it)', async () => {
    const base = join(dir, 'failing');
    const file = new DurableJsonFile<{ text: string }>(base);
    await file.write({ text: 'a' });
    await file.write({ text: 'b' });
    // The next write goes to copy a: let it write a long copy half-way and fail (a full disk).
    const slots = (file as unknown as { slots: Record<'a' | 'b', { handle: { write: (...args: unknown[]) => Promise<{ bytesWritten: number }> } }> }).slots;
    const handle = slots.a.handle;
    const real = handle.write.bind(handle);
    handle.write = async (buffer: unknown, offset: unknown, length: unknown, position: unknown) => {
      await real(buffer, offset, length, position);
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    };
    await assert.rejects(file.write({ text: 'x'.repeat(500) }), /no space/);
    handle.write = real;
    await file.write({ text: 'c' });
    await file.close();
    assert.deepEqual(await new DurableJsonFile<{ text: string }>(base).read(), { text: 'c' });
  });
  it('writes each copy through O_DSYNC (on disk when write returns) and still syncs a copy that shrinks', { skip: process.platform !== 'linux' && 'reads /proc/self/fdinfo' }, async () => {
    const base = join(dir, 'synced');
    const file = new DurableJsonFile<{ text: string }>(base);
    const slots = (file as unknown as { slots: Record<'a' | 'b', { handle: { fd: number; datasync: () => Promise<void> } | null }> }).slots;
    await file.write({ text: 'x'.repeat(300) });
    await file.write({ text: 'y'.repeat(300) });
    for (const name of ['a', 'b'] as const) {
      const info = await readFile(`/proc/self/fdinfo/${slots[name]!.handle!.fd}`, 'utf8');
      const flags = parseInt(/^flags:\s+([0-7]+)/m.exec(info)![1]!, 8);
      assert.notEqual(flags & constants.O_DSYNC, 0, `copy ${name} open with O_DSYNC (flags ${flags.toString(8)})`);
    }
    const synced: string[] = [];
    for (const name of ['a', 'b'] as const) {
      const handle = slots[name]!.handle!;
      const real = handle.datasync.bind(handle);
      handle.datasync = async () => {
        synced.push(name);
        await real();
      };
    }
    await file.write({ text: 'z'.repeat(400) });
    assert.deepEqual(synced, [], 'a copy no shorter: the write alone');
    await file.write({ text: 'short' });
    assert.deepEqual(synced, ['b'], 'a shorter copy: its new length synced');
    await file.close();
    assert.deepEqual(await new DurableJsonFile<{ text: string }>(base).read(), { text: 'short' });
  });
});
