import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Low, Memory } from 'lowdb';
import type { AccountRecord, ApiKeyRecord, Settings } from '../model/account.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import { ACTIVE_STATUSES, type ConversionStatus } from '../model/status.ts';
import { DirectorySync } from './directory-sync.ts';
import { DurableJsonFile, fsyncDirectory } from './durable-json-file.ts';
import { DEFAULT_SETTINGS, IDEMPOTENCY_TTL_MS, type DayUsage, type DeliveryRecord, type FlushOptions, type InsertOptions, type ListQuery, type Store, type StorePeek, type UpdateOptions, type WebTokenRecord } from './types.ts';
import { conversionIdFloor, conversionIdTime } from '../model/ids.ts';
import { KeyedMutex } from './keyed-mutex.ts';

interface MainData {
  version: 1;
  accounts: AccountRecord[];
  keys: ApiKeyRecord[];
  settings: Settings;
  deliveries: DeliveryRecord[];
  /** The web face's sign-in links and sessions (absent from files written before it: read as none). */
  web_tokens: WebTokenRecord[];
}

interface ShardData {
  conversions: ConversionRecord[];
}

export interface LowdbStoreOptions {
  /** Where the files live; null keeps everything in memory (see `inMemory`). */
  dir: string | null;
  /**
   * How long writes are gathered before a flush starts (default 0: at the end of the current
   * turn of the event loop). Under load, writes also gather while the previous flush is on its
   * way to disk (group commit), so a fixed delay only adds latency to every acknowledged write.
   */
  flushDelayMs?: number;
  /**
   * Conversions are spread over this many files, so a write rewrites one small file rather than
   * the whole history (lowdb rewrites a file whole on every write).
   */
  shards?: number;
}


const DEFAULT_MAIN: MainData = { version: 1, accounts: [], keys: [], settings: structuredClone(DEFAULT_SETTINGS), deliveries: [], web_tokens: [] };
const MAIN = -1;
const DEFERRED_FLUSH_MS = 1000;

/** Conversion shards of a store opened without `shards`: two files each once written. */
export const DEFAULT_SHARDS = 1024;

/**
 * The Store on lowdb. All data is held in memory with indexes by id, account, status and
 * idempotency key; writes mark a file dirty and are coalesced into one flush that rewrites only
 * the changed files (in place, in turn between two copies: see DurableJsonFile). Reads never touch the disk.
 */
export class LowdbStore implements Store {
  private readonly flushDelayMs: number;
  private readonly shardCount: number;
  /** Syncs the conversions directory for every shard's first write (one sync for a flush's new files). */
  private conversionsDirSync: DirectorySync | null = null;
  private main!: Low<MainData>;
  private shards: Low<ShardData>[] = [];
  private readonly dirty = new Set<number>();
  private readonly deferred = new Set<number>();
  private deferredTimer: NodeJS.Timeout | null = null;
  private cancelScheduledFlush: (() => void) | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  private closed = false;
  /** One process holds the data dir (its lock file): a lock in memory is every process's. */
  private readonly locks = new KeyedMutex();

  private readonly conversions = new Map<string, ConversionRecord>();
  /** Ids of each account's conversions, oldest first (ids sort by creation time). */
  private readonly byAccount = new Map<string, string[]>();
  private readonly activeByAccount = new Map<string, Set<string>>();
  private readonly succeeded = new Set<string>();
  private readonly byIdempotencyKey = new Map<string, string>();
  private readonly keysByHash = new Map<string, ApiKeyRecord>();
  private readonly keysById = new Map<string, ApiKeyRecord>();
  private readonly accountsById = new Map<string, AccountRecord>();
  /** Ids of the accounts of each name (sign-in by name). */
  private readonly accountsByName = new Map<string, Set<string>>();
  /** Everything is in memory: every read can be answered at once (StorePeek). */
  readonly peek: StorePeek = {
    settings: () => this.main.data.settings,
    apiKeyByHash: (hash) => this.keysByHash.get(hash),
    account: (id) => this.accountsById.get(id),
    conversion: (id) => this.conversions.get(id),
  };
  /** The same objects as `main.data.web_tokens`: a session is looked up on every page. */
  private readonly webTokensByHash = new Map<string, WebTokenRecord>();
  /**
   * Each stored conversion's JSON as last written, until it changes (updateConversion): a
   * shard's write serializes only the records that changed, not every one the shard holds (a
   * box keeping a day of results has dozens in each).
   */
  private readonly recordJson = new WeakMap<ConversionRecord, string>();
  /**
   * Shards where a conversion dropped what it keeps only while it runs (an upload held in the
   * record, `input_bytes`; a document's password, `secret_options`: both at its end) since their
   * last write. The write that drops it overwrites one copy of the file; the other still holds it
   * until the shard is written once more, which is then done within DEFERRED_FLUSH_MS (at once
   * when the store closes): an ended conversion's upload is on disk about as long as a stored
   * input file was (removed once the end is on disk). A crash within that second leaves it in the
   * older copy until the shard's next write.
   */
  private readonly droppedInputs = new Set<number>();
  /** Conversions inserted `deferred` that no write of their shard has held yet, by shard. */
  private readonly unwritten = new Map<number, Set<string>>();
  /** False for a store that lives in memory only (`dir: null`). */
  private keepsFiles = false;

  private constructor(options: LowdbStoreOptions) {
    this.flushDelayMs = options.flushDelayMs ?? 0;
    this.shardCount = options.shards ?? DEFAULT_SHARDS;
  }

  static async open(options: LowdbStoreOptions): Promise<LowdbStore> {
    const store = new LowdbStore(options);
    if (options.dir === null) store.loadEmpty();
    else {
      try {
        await store.load(options.dir);
      } catch (error) {
        // The files and the directory a failed start opened are not left open.
        for (const low of [store.main, ...store.shards]) if (low?.adapter instanceof DurableJsonFile) await low.adapter.close();
        await store.conversionsDirSync?.close();
        throw error;
      }
    }
    return store;
  }

  /**
   * A store that lives and dies with the process (lowdb's Memory adapter): the CLI's in-process
   * runs, whose data dir is removed when the command ends, have nothing to keep on disk, and
   * writing it cost them more than the conversions of a batch of small images.
   */
  private loadEmpty(): void {
    this.main = new Low<MainData>(new Memory(), structuredClone(DEFAULT_MAIN));
    this.shards = Array.from({ length: this.shardCount }, () => new Low<ShardData>(new Memory(), { conversions: [] }));
  }

  private async load(dir: string): Promise<void> {
    this.keepsFiles = true;
    const conversionsDir = join(dir, 'conversions');
    await mkdir(conversionsDir, { recursive: true, mode: 0o700 });
    this.main = new Low<MainData>(new DurableJsonFile(join(dir, 'main'), join(dir, 'main.json')), structuredClone(DEFAULT_MAIN));
    await this.main.read();
    this.main.data.deliveries ??= [];
    this.main.data.web_tokens ??= [];
    this.main.data.settings ??= structuredClone(DEFAULT_SETTINGS);
    for (const key of this.main.data.keys) {
      this.keysByHash.set(key.hash, key);
      this.keysById.set(key.id, key);
    }
    for (const account of this.main.data.accounts) {
      this.accountsById.set(account.id, account);
      this.indexName(account);
    }
    for (const token of this.main.data.web_tokens) this.webTokensByHash.set(token.hash, token);

    // Each shard's adapter reads its own copies: it must know which copy is the newer before it
    // writes. Conversions are then placed by the current shard count and hash: files of another
    // shard count, or of the older one-file-per-shard layout (`NNN.json`), are redistributed
    // and removed, once.
    const names = new Set(await readdir(conversionsDir));
    const currentBases = new Set<string>();
    const found: { base: string; data: ShardData }[] = [];
    const unwritten: string[] = [];
    const unwrittenShards: DurableJsonFile<ShardData>[] = [];
    this.conversionsDirSync = new DirectorySync(conversionsDir);
    const directory = this.conversionsDirSync;
    this.shards = await Promise.all(Array.from({ length: this.shardCount }, async (_, index) => {
      const base = shardBase(index);
      currentBases.add(base);
      const adapter = new DurableJsonFile<ShardData>(join(conversionsDir, base), null, (data) => this.shardJson(data, index), directory);
      const shard = new Low<ShardData>(adapter, { conversions: [] });
      const present = DurableJsonFile.paths(base).filter((path) => names.has(basename(path)));
      const data = present.length > 0 ? await adapter.read() : null;
      if (data) found.push({ base, data });
      // A shard's files are made by its first write (an administrator's `ls` shows what holds
      // something); earlier versions made all 2,048 at the first start, empty: those go.
      else if (present.length > 0 && adapter.neverWritten) {
        unwritten.push(...present);
        unwrittenShards.push(adapter);
      } else if (present.length === 0) adapter.absent();
      return shard;
    }));
    await this.removeFiles(conversionsDir, unwritten, names);
    for (const adapter of unwrittenShards) adapter.absent();
    // A copy found here may have been made by a process that died before it synced its
    // directory: one sync of each directory makes every name found durable before this process
    // acknowledges a write to one of them (and the removals just made durable too).
    await Promise.all([directory.sync(), fsyncDirectory(dir)]);
    const strayFiles: string[] = [];
    for (const name of names) {
      const copy = /^([0-9a-f]+)\.[ab]\.json$/.exec(name);
      if (copy && !currentBases.has(copy[1]!)) strayFiles.push(name);
      // The older layout's shards, and the temp files its writes left behind in a crash.
      if (/^[0-9a-f]+\.json(\.tmp)?$/.test(name)) strayFiles.push(name);
    }
    const strayBases = new Set<string>();
    for (const name of strayFiles) {
      const copy = /^([0-9a-f]+)\.[ab]\.json$/.exec(name);
      if (copy) strayBases.add(copy[1]!);
      else if (name.endsWith('.json')) found.push({ base: name, data: JSON.parse(await readFile(join(conversionsDir, name), 'utf8')) as ShardData });
    }
    for (const base of strayBases) {
      const data = await new DurableJsonFile<ShardData>(join(conversionsDir, base)).read();
      if (data) found.push({ base, data });
    }
    // A crash in the middle of an earlier move can leave a conversion in two files: each is kept
    // once, as found in the file it belongs to when that file has it.
    const chosen = new Map<string, { record: ConversionRecord; base: string }>();
    for (const { base, data } of found) {
      for (const record of data.conversions) {
        const earlier = chosen.get(record.id);
        if (!earlier || (base === shardBase(this.shardOf(record.id)) && earlier.base !== base)) chosen.set(record.id, { record, base });
      }
    }
    const staying = new Map<string, number>();
    for (const { record, base } of chosen.values()) {
      const shard = this.shardOf(record.id);
      this.shards[shard]!.data.conversions.push(record);
      if (shardBase(shard) === base) staying.set(base, (staying.get(base) ?? 0) + 1);
      else this.dirty.add(shard); // moved here: written at its new place
    }
    // A shard file holding anything but exactly what stays in it (moved out, twice) is rewritten.
    for (const { base, data } of found) {
      if (currentBases.has(base) && data.conversions.length !== (staying.get(base) ?? 0)) this.dirty.add(parseInt(base, 16));
    }
    const all = this.shards.flatMap((shard) => shard.data.conversions);
    all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const record of all) this.index(record);
    if (this.dirty.size > 0 || strayFiles.length > 0) {
      // Written to their new places first, so that a crash in between loses nothing; and the old
      // files stay when that failed (a full disk at start), to be read again next time.
      await this.runFlush();
      if (this.dirty.size > 0) throw new Error(`the store could not write ${this.dirty.size} of its files at start (is the disk full?)`);
      for (const name of strayFiles) await unlink(join(conversionsDir, name)).catch(() => undefined);
      await directory.sync();
    }
  }

  /** Removes `files` of the conversions dir (and from `names`); the start's directory sync that follows makes it durable. */
  private async removeFiles(conversionsDir: string, files: string[], names: Set<string>): Promise<void> {
    if (files.length === 0) return;
    for (let at = 0; at < files.length; at += 64) {
      await Promise.all(files.slice(at, at + 64).map((name) => unlink(join(conversionsDir, name)).catch(() => undefined)));
    }
    for (const name of files) names.delete(name);
  }

  /** FNV-1a over the id: ids end in random characters, so this spreads them evenly, cheaply. */
  private shardOf(id: string): number {
    let hash = 0x811c9dc5;
    for (let index = 0; index < id.length; index++) {
      hash ^= id.charCodeAt(index);
      hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % this.shardCount;
  }

  private index(record: ConversionRecord): void {
    this.conversions.set(record.id, record);
    let ids = this.byAccount.get(record.account_id);
    if (!ids) this.byAccount.set(record.account_id, (ids = []));
    // New ids are almost always the largest; keep the array sorted for the rare exception.
    if (ids.length === 0 || ids[ids.length - 1]! < record.id) ids.push(record.id);
    else ids.splice(lowerBound(ids, record.id), 0, record.id);
    this.indexStatus(record);
    if (record.idempotency_key) {
      // The newest conversion holds a key, whatever order they arrive in (an import: newest first).
      const key = idempotencyIndexKey(record.account_id, record.idempotency_key);
      const holder = this.conversions.get(this.byIdempotencyKey.get(key) ?? '');
      if (!holder || holder.created_at <= record.created_at) this.byIdempotencyKey.set(key, record.id);
    }
  }

  private indexStatus(record: ConversionRecord): void {
    let active = this.activeByAccount.get(record.account_id);
    if (!active) this.activeByAccount.set(record.account_id, (active = new Set()));
    if (ACTIVE_STATUSES.has(record.status)) active.add(record.id);
    else active.delete(record.id);
    if (record.status === 'succeeded') this.succeeded.add(record.id);
    else this.succeeded.delete(record.id);
  }

  private markDirty(shard: number): void {
    this.dirty.add(shard);
    this.deferred.delete(shard);
    this.scheduleFlush();
  }

  /**
   * A change that may reach the disk late (progress, `processing`): a crash loses nothing that
   * matters, since recovery re-queues active work anyway. It is written with the next flush that
   * writes the file for another reason, and at the latest after DEFERRED_FLUSH_MS.
   */
  private markDeferred(shard: number): void {
    if (this.dirty.has(shard)) return;
    this.deferred.add(shard);
    if (!this.deferredTimer && !this.closed) {
      this.deferredTimer = setTimeout(() => {
        this.deferredTimer = null;
        for (const pending of this.deferred) this.dirty.add(pending);
        this.deferred.clear();
        if (this.dirty.size > 0) this.scheduleFlush();
      }, DEFERRED_FLUSH_MS);
      this.deferredTimer.unref();
    }
  }

  private scheduleFlush(): void {
    if (!this.cancelScheduledFlush && !this.closed) {
      // Not unref'd: pending writes must keep the process alive until they are on disk.
      if (this.flushDelayMs > 0) {
        const timer = setTimeout(() => void this.runFlush(), this.flushDelayMs);
        this.cancelScheduledFlush = () => clearTimeout(timer);
      } else {
        const immediate = setImmediate(() => void this.runFlush());
        this.cancelScheduledFlush = () => clearImmediate(immediate);
      }
    }
  }

  private runFlush(): Promise<void> {
    this.cancelScheduledFlush?.();
    this.cancelScheduledFlush = null;
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  /**
   * Writes every file changed so far. The batch is taken when the previous flush has ended, not
   * when this one was scheduled: writes made meanwhile share one round of fsyncs (group commit).
   */
  private async writeBatch(): Promise<void> {
    const batch = [...this.dirty];
    this.dirty.clear();
    for (const shard of batch) this.deferred.delete(shard);
    // Each file's bytes are made as its write starts (below): these writes drop the inputs.
    const dropping = batch.filter((shard) => this.droppedInputs.delete(shard));
    const waiters = this.waiters;
    this.waiters = [];
    try {
      // Different files: written and fsynced side by side, so their fsyncs share a journal commit.
      // allSettled: a file still being written must not be written again by the next batch.
      const written = await Promise.allSettled(batch.map((shard) => (shard === MAIN ? this.main.write() : this.shards[shard]!.write())));
      const failure = written.find((outcome) => outcome.status === 'rejected');
      if (failure) throw failure.reason;
      // The other copy of each still holds the dropped inputs: written once more, soon.
      for (const shard of dropping) this.markDeferred(shard);
      for (const waiter of waiters) waiter.resolve();
    } catch (error) {
      // Not on disk: keep the files dirty so that the next flush tries them again.
      for (const shard of dropping) this.droppedInputs.add(shard);
      for (const shard of batch) this.dirty.add(shard);
      for (const waiter of waiters) waiter.reject(error);
    }
  }

  async flush(options: FlushOptions = {}): Promise<void> {
    if (options.conversion !== undefined) {
      const shard = this.shardOf(options.conversion);
      if (this.deferred.delete(shard)) this.dirty.add(shard);
    }
    if (this.dirty.size === 0) return this.flushing;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    // Files left dirty by a failed flush have no flush scheduled: this one retries them.
    this.scheduleFlush();
    return done;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.deferredTimer) clearTimeout(this.deferredTimer);
    for (const shard of this.deferred) this.dirty.add(shard);
    this.deferred.clear();
    await this.runFlush();
    // A write of this last flush that dropped an upload or a password asked for the other copy
    // to be written too (writeBatch): no timer runs any more, so it is written now.
    if (this.deferred.size > 0) {
      for (const shard of this.deferred) this.dirty.add(shard);
      this.deferred.clear();
      await this.runFlush();
    }
    for (const low of [this.main, ...this.shards]) if (low.adapter instanceof DurableJsonFile) await low.adapter.close();
    await this.conversionsDirSync?.close();
  }

  /** `options`: deferral is decided by each write here (updateConversion), not by the step. */
  exclusive<T>(key: string, work: (store: Store) => Promise<T>, _options?: UpdateOptions): Promise<T> {
    return this.locks.run(key, () => work(this));
  }

  async getConversion(id: string): Promise<ConversionRecord | undefined> {
    const record = this.conversions.get(id);
    return record ? { ...record } : undefined;
  }

  async insertConversion(record: ConversionRecord, options: InsertOptions = {}): Promise<void> {
    if (this.conversions.has(record.id)) throw new Error(`duplicate conversion id ${record.id}`);
    const stored = { ...record };
    const shard = this.shardOf(stored.id);
    this.shards[shard]!.data.conversions.push(stored);
    this.index(stored);
    if (options.deferred && this.keepsFiles) {
      let ids = this.unwritten.get(shard);
      if (!ids) this.unwritten.set(shard, (ids = new Set()));
      ids.add(stored.id);
      this.markDeferred(shard);
    } else {
      this.markDirty(shard);
    }
  }

  written(id: string): boolean {
    return this.keepsFiles && !this.unwritten.get(this.shardOf(id))?.has(id);
  }

  /**
   * A shard's JSON, byte for byte JSON.stringify's, from each record's as last written where it
   * has not changed. Made as its write starts: every record in it is then written.
   */
  private shardJson(data: ShardData, shard: number): string {
    this.unwritten.delete(shard);
    const parts = data.conversions.map((record) => {
      let json = this.recordJson.get(record);
      if (json === undefined) {
        json = JSON.stringify(record);
        this.recordJson.set(record, json);
      }
      return json;
    });
    return `{"conversions":[${parts.join(',')}]}`;
  }

  async updateConversion(id: string, patch: Partial<ConversionRecord>, options: UpdateOptions = {}): Promise<ConversionRecord | undefined> {
    const record = this.conversions.get(id);
    if (!record) return undefined;
    if (options.whileActive && !ACTIVE_STATUSES.has(record.status)) return { ...record };
    const { id: _ignored, account_id: _owner, ...rest } = patch;
    // Both are set at the insert only: a conversion in no file yet (`written`) never had them on disk.
    if ((drops(record, rest, 'input_bytes') || drops(record, rest, 'secret_options')) && this.written(id)) this.droppedInputs.add(this.shardOf(id));
    Object.assign(record, rest);
    this.recordJson.delete(record);
    if (patch.status) this.indexStatus(record);
    if (options.deferred) this.markDeferred(this.shardOf(id));
    else this.markDirty(this.shardOf(id));
    return { ...record };
  }

  async listConversions(query: ListQuery): Promise<ConversionRecord[]> {
    const ids = this.byAccount.get(query.accountId) ?? [];
    const page: ConversionRecord[] = [];
    let index = query.before === undefined ? ids.length - 1 : lowerBound(ids, query.before) - 1;
    for (; index >= 0 && page.length < query.limit; index--) {
      const record = this.conversions.get(ids[index]!);
      if (record && (!query.status || record.status === query.status)) page.push({ ...record });
    }
    return page;
  }

  async findByIdempotencyKey(accountId: string, key: string): Promise<ConversionRecord | undefined> {
    const id = this.byIdempotencyKey.get(idempotencyIndexKey(accountId, key));
    const record = id ? this.conversions.get(id) : undefined;
    if (!record) return undefined;
    if (Date.now() - Date.parse(record.created_at) > IDEMPOTENCY_TTL_MS) return undefined;
    return { ...record };
  }

  async resultBytes(): Promise<number> {
    let bytes = 0;
    for (const id of this.succeeded) bytes += this.conversions.get(id)?.result?.size ?? 0;
    return bytes;
  }

  async conversionsWithStatus(statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    const wanted = new Set(statuses);
    const found: ConversionRecord[] = [];
    for (const record of this.conversions.values()) if (wanted.has(record.status)) found.push({ ...record });
    return found.sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  async conversionsEndedSince(isoTime: string, statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    // In memory: a look at every record, as start-up recovery made before.
    const wanted = new Set(statuses);
    const found: ConversionRecord[] = [];
    for (const record of this.conversions.values()) {
      if (wanted.has(record.status) && record.finished_at && record.finished_at >= isoTime) found.push({ ...record });
    }
    return found.sort((a, b) => byText(a.finished_at!, b.finished_at!) || byText(a.id, b.id));
  }

  async conversionsExpiringBy(isoTime: string): Promise<ConversionRecord[]> {
    const found: ConversionRecord[] = [];
    for (const id of this.succeeded) {
      const record = this.conversions.get(id);
      if (record?.result && record.result.expires_at <= isoTime) found.push({ ...record });
    }
    return found;
  }

  async countActive(accountId: string): Promise<number> {
    return this.activeByAccount.get(accountId)?.size ?? 0;
  }

  async creditSums(accountId: string, sinceIso: string): Promise<{ charged: number; reserved: number }> {
    // Both from memory with no await between them: one moment.
    let charged = 0;
    for (const id of this.byAccount.get(accountId) ?? []) {
      const record = this.conversions.get(id);
      if (record?.charged_at && record.charged_at >= sinceIso) charged += record.credits;
    }
    let reserved = 0;
    for (const id of this.activeByAccount.get(accountId) ?? []) reserved += this.conversions.get(id)?.reserved_credits ?? 0;
    return { charged, reserved };
  }

  async usageByDay(accountId: string, sinceIso: string): Promise<DayUsage[]> {
    // The window's end of the account's ids (they sort by creation), read from memory once.
    const ids = this.byAccount.get(accountId) ?? [];
    const days = new Map<string, DayUsage>();
    const dayOf = (day: string) => days.get(day) ?? days.set(day, { day, conversions: 0, credits: 0 }).get(day)!;
    for (let index = lowerBound(ids, conversionIdFloor(Date.parse(sinceIso))); index < ids.length; index++) {
      const record = this.conversions.get(ids[index]!);
      if (!record || record.created_at < sinceIso) continue;
      dayOf(record.created_at.slice(0, 10)).conversions++;
      if (record.charged_at) dayOf(record.charged_at.slice(0, 10)).credits += record.credits;
    }
    return [...days.values()];
  }

  async chargedSince(periods: readonly { accountId: string; sinceIso: string }[]): Promise<Map<string, number>> {
    const charged = new Map<string, number>();
    for (const { accountId, sinceIso } of periods) charged.set(accountId, (await this.creditSums(accountId, sinceIso)).charged);
    return charged;
  }

  async countCreatedSince(accountId: string, sinceMs: number): Promise<number> {
    const ids = this.byAccount.get(accountId) ?? [];
    return ids.length - lowerBound(ids, conversionIdFloor(sinceMs));
  }

  async engineTimeSince(accountId: string, sinceMs: number): Promise<number> {
    const ids = this.byAccount.get(accountId) ?? [];
    let total = 0;
    for (let index = lowerBound(ids, conversionIdFloor(sinceMs)); index < ids.length; index++) total += this.conversions.get(ids[index]!)?.engine_ms ?? 0;
    return total;
  }

  async createdAtOfNewest(accountId: string, n: number): Promise<number | undefined> {
    const ids = this.byAccount.get(accountId) ?? [];
    const id = ids[ids.length - n];
    return id === undefined ? undefined : conversionIdTime(id);
  }

  async pruneFinishedBefore(isoTime: string): Promise<number> {
    const accounts = new Map(this.main.data.accounts.map((a) => [a.id, a]));
    const doomed = new Set<string>();
    for (const record of this.conversions.values()) {
      if (ACTIVE_STATUSES.has(record.status) || record.status === 'succeeded') continue;
      if (!record.finished_at || record.finished_at >= isoTime) continue;
      // A charge inside the current credit period is part of the balance: keep it.
      const base = accounts.get(record.account_id)?.credits_base_at ?? '';
      if (record.charged_at && record.charged_at >= base) continue;
      doomed.add(record.id);
    }
    if (doomed.size === 0) return 0;
    this.shards.forEach((shard, index) => {
      const before = shard.data.conversions.length;
      shard.data.conversions = shard.data.conversions.filter((r) => !doomed.has(r.id));
      if (shard.data.conversions.length !== before) this.markDirty(index);
    });
    for (const id of doomed) {
      const record = this.conversions.get(id)!;
      this.conversions.delete(id);
      this.succeeded.delete(id);
      const ids = this.byAccount.get(record.account_id);
      if (ids) {
        const at = lowerBound(ids, id);
        if (ids[at] === id) ids.splice(at, 1);
      }
      if (record.idempotency_key) this.byIdempotencyKey.delete(idempotencyIndexKey(record.account_id, record.idempotency_key));
    }
    this.main.data.deliveries = this.main.data.deliveries.filter((d) => !doomed.has(d.conversion_id) || d.status === 'pending');
    this.markDirty(MAIN);
    return doomed.size;
  }

  async getAccount(id: string): Promise<AccountRecord | undefined> {
    const account = this.accountsById.get(id);
    return account ? { ...account } : undefined;
  }

  async accountsNamed(name: string, limit: number): Promise<AccountRecord[]> {
    const ids = [...(this.accountsByName.get(name) ?? [])].sort(byText).slice(0, limit);
    return ids.map((id) => ({ ...this.accountsById.get(id)! }));
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.main.data.accounts.map((a) => ({ ...a }));
  }

  async putAccount(record: AccountRecord): Promise<void> {
    const stored = { ...record };
    upsert(this.main.data.accounts, stored);
    const earlier = this.accountsById.get(stored.id);
    if (earlier) this.unindexName(earlier);
    this.indexName(stored);
    this.accountsById.set(stored.id, stored);
    this.markDirty(MAIN);
  }

  private indexName(account: AccountRecord): void {
    const ids = this.accountsByName.get(account.name);
    if (ids) ids.add(account.id);
    else this.accountsByName.set(account.name, new Set([account.id]));
  }

  private unindexName(account: AccountRecord): void {
    const ids = this.accountsByName.get(account.name);
    ids?.delete(account.id);
    if (ids?.size === 0) this.accountsByName.delete(account.name);
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    const key = this.keysById.get(id);
    return key ? { ...key } : undefined;
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.keysByHash.get(hash);
  }

  async listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return this.main.data.keys.filter((k) => k.account_id === accountId).map((k) => ({ ...k }));
  }

  async putApiKey(record: ApiKeyRecord): Promise<void> {
    const stored = { ...record };
    upsert(this.main.data.keys, stored);
    this.keysByHash.set(stored.hash, stored);
    this.keysById.set(stored.id, stored);
    this.markDirty(MAIN);
  }

  async getSettings(): Promise<Settings> {
    // Read on every request (the maintenance switch): a copy by hand costs ~0.1 us where
    // structuredClone costs ~2 us. Copy each nested object here when Settings gains one.
    const settings = this.main.data.settings;
    return { ...settings, maintenance: { ...settings.maintenance } };
  }

  async putSettings(settings: Settings): Promise<void> {
    this.main.data.settings = structuredClone(settings);
    this.markDirty(MAIN);
  }

  async putWebToken(record: WebTokenRecord): Promise<void> {
    const stored = { ...record };
    const earlier = this.webTokensByHash.get(stored.hash);
    const tokens = this.main.data.web_tokens;
    if (earlier) tokens[tokens.indexOf(earlier)] = stored;
    else tokens.push(stored);
    this.webTokensByHash.set(stored.hash, stored);
    this.markDirty(MAIN);
  }

  async getWebToken(hash: string): Promise<WebTokenRecord | undefined> {
    const token = this.webTokensByHash.get(hash);
    return token ? { ...token } : undefined;
  }

  async takeWebToken(hash: string): Promise<WebTokenRecord | undefined> {
    // No await from the look-up to the removal: one caller of the process gets it (one process
    // holds the data dir). Durable with the next flush, like every other write here.
    const token = this.webTokensByHash.get(hash);
    if (!token) return undefined;
    this.webTokensByHash.delete(hash);
    const tokens = this.main.data.web_tokens;
    tokens.splice(tokens.indexOf(token), 1);
    this.markDirty(MAIN);
    return { ...token };
  }

  async deleteWebTokens(accountId: string, kind: WebTokenRecord['kind']): Promise<number> {
    return this.removeWebTokens((token) => token.account_id === accountId && token.kind === kind);
  }

  async pruneWebTokens(isoTime: string): Promise<number> {
    // Compared as instants, not as text: a record written with another ISO form still sorts right.
    const before = Date.parse(isoTime);
    return this.removeWebTokens((token) => Date.parse(token.expires_at) < before);
  }

  private removeWebTokens(doomed: (token: WebTokenRecord) => boolean): number {
    const kept: WebTokenRecord[] = [];
    for (const token of this.main.data.web_tokens) {
      if (doomed(token)) this.webTokensByHash.delete(token.hash);
      else kept.push(token);
    }
    const removed = this.main.data.web_tokens.length - kept.length;
    if (removed === 0) return 0;
    this.main.data.web_tokens = kept;
    this.markDirty(MAIN);
    return removed;
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const delivery = this.main.data.deliveries.find((d) => d.id === id);
    return delivery ? structuredClone(delivery) : undefined;
  }

  async addDelivery(record: DeliveryRecord): Promise<DeliveryRecord> {
    // No await from the look-up to the addition: one process holds the data dir.
    const existing = this.main.data.deliveries.find((d) => d.conversion_id === record.conversion_id && d.event === record.event);
    if (existing) return structuredClone(existing);
    this.main.data.deliveries.push(structuredClone(record));
    this.markDirty(MAIN);
    return structuredClone(record);
  }

  async putDelivery(record: DeliveryRecord): Promise<void> {
    upsert(this.main.data.deliveries, structuredClone(record));
    this.markDirty(MAIN);
  }

  async recentDeliveries(accountId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.main.data.deliveries
      .filter((d) => d.account_id === accountId)
      .sort((a, b) => byText(b.created_at, a.created_at) || byText(b.id, a.id))
      .slice(0, limit)
      .map((d) => structuredClone(d));
  }

  async listDeliveries(filter: { conversionId?: string; status?: DeliveryRecord['status'] }): Promise<DeliveryRecord[]> {
    return this.main.data.deliveries
      .filter((d) => (!filter.conversionId || d.conversion_id === filter.conversionId) && (!filter.status || d.status === filter.status))
      .map((d) => structuredClone(d));
  }
}

/** Whether `patch` removes a field `record` has (sets it to undefined). */
function drops(record: ConversionRecord, patch: Partial<ConversionRecord>, field: 'input_bytes' | 'secret_options'): boolean {
  return record[field] !== undefined && field in patch && patch[field] === undefined;
}

/** A shard's files are `<base>.a.json` and `<base>.b.json` (see DurableJsonFile). */
function shardBase(index: number): string {
  return index.toString(16).padStart(3, '0');
}

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function idempotencyIndexKey(accountId: string, key: string): string {
  return `${accountId}\u0000${key}`;
}

function upsert<T extends { id: string }>(list: T[], record: T): void {
  const index = list.findIndex((item) => item.id === record.id);
  if (index === -1) list.push(record);
  else list[index] = record;
}

/** First index whose id is >= `id` in an ascending array. */
function lowerBound(ids: string[], id: string): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (ids[mid]! < id) low = mid + 1;
    else high = mid;
  }
  return low;
}
