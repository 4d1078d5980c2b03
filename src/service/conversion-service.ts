import type { Readable } from 'node:stream';
import { ApiError } from '../errors/api-error.ts';
import type { FormatRegistry } from '../formats/registry.ts';
import type { FormatDetails, FormatListing, OptionDescriptor } from '../model/formats.ts';
import type { ConversionPair } from '../engines/pairs.ts';
import type { ListPage } from '../model/list-page.ts';
import type { AccountRecord } from '../model/account.ts';
import { toPublicConversion, type ConversionRecord, type PublicConversion } from '../model/conversion.ts';
import { ACTIVE_STATUSES, END_STATUSES, assertTransition, isStatus, type ConversionStatus } from '../model/status.ts';
import type { JobOwner, JobSource } from '../queue/job-source.ts';
import type { WorkerPool } from '../queue/worker-pool.ts';
import type { BlobStore } from '../store/blob-store.ts';
import { UNLIMITED_ROOM, type DiskRoom } from '../store/disk-room.ts';
import type { Store, StorePeek } from '../store/types.ts';
import type { AccountService } from './accounts.ts';
import type { ServiceConfig } from './config.ts';
import { conversionCost } from './credits.ts';
import { creditCost, markImageFiles, mergeInputFiles, packMergeInputs } from './merge-bundle.ts';
import { validateCreateRequest, validationError, type CreateRequestInput, type RequestRules } from './create-request.ts';
import { adoptUpload, spooledOnDisk, spooledPath } from './spooled-file.ts';
import { inlineInput } from './engine-input.ts';
import { EndEvents } from './end-events.ts';
import { isConversionId, newConversionId } from '../model/ids.ts';
import { headerPixels } from '../inputs/image-header.ts';
import { PublicJsonCache } from './public-json-cache.ts';
import { checkSubmissionLimits } from './submission-limits.ts';
import { checkPageCap } from './page-cap.ts';
import { UploadHolds, type UploadHold } from './upload-holds.ts';

const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

export interface CreateOutcome {
  record: ConversionRecord;
  /** True when an Idempotency-Key matched an earlier request: nothing new was started. */
  replayed: boolean;
  wait: number;
}

export interface DownloadHandle {
  record: ConversionRecord;
  size: number;
  /** The result (or the inclusive range), once open; rejects when it is gone (expired, deleted meanwhile). */
  open(range?: { start: number; end: number }): Promise<Readable>;
  /** The whole result in memory (a small one); rejects as `open` does. */
  readAll(): Promise<Buffer>;
  /** Where the result file is, for a caller on this machine that copies rather than streams it; null in a bucket. */
  localPath: string | null;
}

/**
 * The rules of the spec in one place: submission (validation, idempotency, limits, credits),
 * reading, listing, cancelling, deleting, downloading and expiring conversions.
 */
export class ConversionService {
  readonly events = new EndEvents();
  /** Several nodes: asks the others to stop a cancelled conversion that runs on one of them. */
  cancelElsewhere?: (id: string) => void;
  /** Uploads between `admitUpload` and the end of `create`. */
  readonly uploads = new UploadHolds();
  /** nowIso's last answer, and the millisecond it was made for. */
  private iso = '';
  private isoAt = Number.NaN;

  constructor(
    readonly store: Store,
    readonly blobs: BlobStore,
    readonly registry: FormatRegistry,
    readonly accounts: AccountService,
    readonly config: ServiceConfig,
    private readonly queue: JobSource,
    private readonly rules: RequestRules,
    readonly now: () => Date = () => new Date(),
  ) {
    this.peek = store.peek;
  }

  /** Set once the worker pool exists (the pool needs the service's runner, the service the pool). */
  pool: WorkerPool | null = null;

  /** What may still be written above the disk floor: results and URL inputs keep within it. */
  diskRoom: DiskRoom = UNLIMITED_ROOM;

  /** `baseUrl`: the address the caller reached (a trusted proxy's X-Forwarded-*); default the configured one. */
  publicView(record: ConversionRecord, baseUrl = this.config.baseUrl): PublicConversion {
    return toPublicConversion(record, baseUrl);
  }

  private readonly publicJsonCache = new PublicJsonCache();
  /** The store's memory, read at once (StorePeek); taken once: a store's peek never changes. */
  private readonly peek: StorePeek | undefined;

  /** `JSON.stringify(publicView(record, baseUrl))`, from a cache while the record is unchanged. */
  publicJson(record: ConversionRecord, baseUrl = this.config.baseUrl): string {
    return this.publicJsonCache.render(record, baseUrl);
  }

  /**
   * Before a byte of an upload is read: the account's limits as `create` checks them, with the
   * cost estimated from what the upload announced (`fileBytes`: the least the file can be, null
   * when its size was not announced) at the lightest weight of any pair, since the pair is not
   * known before the body is. Passed, the upload holds its place and that estimate until
   * `create`, which is given the hold, has inserted the conversion or failed. Returns null when
   * the Idempotency-Key already names a conversion of the account: a replay is answered from
   * `create` with the original, whatever the limits say now.
   *
   * An upload with the same key already in flight is most likely this very request sent again:
   * it waits (up to `patienceMs`) for that one to end, and is then a replay, or, if the other
   * failed, checked on its own. So duplicates sent at the same moment all get the original, as
   * before, and do not take a place each.
   */
  async admitUpload(
    account: AccountRecord,
    upload: { fileBytes: number | null; idempotencyKey?: string | undefined; patienceMs: number },
  ): Promise<UploadHold | null> {
    const plan = this.config.plans[account.plan];
    const cost = plan.credits_type === 'unmetered' ? 0 : conversionCost(this.registry.minCreditWeight(), upload.fileBytes);
    const key = upload.idempotencyKey;
    const patience = Date.now() + upload.patienceMs;
    for (;;) {
      const step = await this.store.exclusive(`account:${account.id}`, async (store): Promise<{ hold: UploadHold | null } | { twin: UploadHold }> => {
        if (key !== undefined && (await store.findByIdempotencyKey(account.id, key))) return { hold: null };
        const twin = key !== undefined && Date.now() < patience ? this.uploads.withKey(account.id, key) : undefined;
        if (twin) return { twin };
        await checkSubmissionLimits(store, account, plan, cost, this.uploads.heldBy(account.id), this.now().getTime());
        return { hold: this.uploads.add(account.id, cost, key ?? null) };
      });
      if ('hold' in step) return step.hold;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([step.twin.released, new Promise<void>((resolve) => (timer = setTimeout(resolve, patience - Date.now())))]);
      clearTimeout(timer);
    }
  }

  /** `hold`: the request's own from `admitUpload`, released here whatever the outcome. */
  async create(account: AccountRecord, input: CreateRequestInput, hold?: UploadHold): Promise<CreateOutcome> {
    let adopted: string | null = null;
    let kept = false;
    // A merge's files unpacked from a zip: spool files the request did not send, removed on a refusal too.
    let unpacked: string[] = [];
    try {
      const request = await validateCreateRequest(input, this.registry, this.rules);
      unpacked = (request.merge ?? []).map((one) => one.file.path).filter((path) => !input.files.some((file) => file.path === path));
      const plan = this.config.plans[account.plan];
      if (request.merge && request.merge.length > plan.max_inputs) {
        throw validationError({ file: { reason: 'invalid_value', params: { text: `${request.merge.length} files; at most ${plan.max_inputs} are merged on the ${plan.name} plan` } } });
      }
      if (request.input.kind === 'file' && !request.merge) {
        const file = request.input.file;
        await checkPageCap(this.registry, request.pair, () => spooledPath(file), plan);
      }
      const inputs = request.merge ? mergeInputFiles(request.merge) : undefined;
      const inputSize = inputs ? inputs.reduce((sum, one) => sum + one.size, 0) : request.input.kind === 'file' ? request.input.file.size : null;
      const cost = plan.credits_type === 'unmetered' ? 0 : creditCost(this.registry, request.pair, inputSize, inputs);
      const created = this.now();
      const id = newConversionId(created.getTime());
      const inlined = request.input.kind === 'file' && !request.merge && !request.markImages
        ? inlineInput(request.input.file, this.registry.engine(request.pair.engine), request.pair) : undefined;
      if (request.merge) {
        // One stored input as any conversion's: the files in a zip, each spool file gone once in it.
        const bundle = await packMergeInputs(this.blobs, request.merge, request.markImages);
        // The files sent, and those unpacked from a zip that was sent.
        for (const file of new Set([...input.files, ...request.merge.map((one) => one.file)])) if (spooledOnDisk(file)) await this.blobs.discardSpool(file.path);
        await this.blobs.adoptInput(id, bundle).catch(async (error: unknown) => {
          await this.blobs.discardSpool(bundle);
          throw error;
        });
        adopted = id;
      } else if (request.input.kind === 'file' && inlined !== undefined) {
        // Kept in the record: no file to store.
      } else if (request.input.kind === 'file') {
        // Before the account's lock: into a bucket this takes as long as the file, and the lock
        // (in PostgreSQL a transaction on a pooled connection) must not wait for it. Removed
        // again below when the submission is refused or replayed.
        await adoptUpload(this.blobs, id, request.input.file);
        adopted = id;
      }

      const outcome = await this.store.exclusive(`account:${account.id}`, async (store): Promise<CreateOutcome> => {
        if (request.idempotencyKey) {
          const earlier = await store.findByIdempotencyKey(account.id, request.idempotencyKey);
          if (earlier) {
            if (earlier.request_fingerprint !== request.fingerprint) throw new ApiError('idempotency_conflict');
            return { record: earlier, replayed: true, wait: request.wait };
          }
        }
        await checkSubmissionLimits(store, account, plan, cost, this.uploads.heldBy(account.id, hold), this.now().getTime());
        const record: ConversionRecord = {
          id,
          account_id: account.id,
          status: 'queued',
          source: request.pair.source,
          target: request.pair.target,
          variant: request.variant,
          options: request.options,
          ...(Object.keys(request.secretOptions).length > 0 ? { secret_options: request.secretOptions } : {}),
          original_name: request.originalName,
          input_size: inputSize,
          ...(!inputs && request.input.kind === 'file' && request.input.file.head ? { input_pixels: headerPixels(request.input.file.head) } : {}),
          ...(inlined !== undefined ? { input_bytes: inlined } : {}),
          input: request.input.kind === 'file' ? { kind: 'file', sha256: request.input.file.sha256 } : { kind: 'url', url: request.input.url },
          ...(inputs ? { inputs } : {}),
          ...(request.markImages ? { mark_images: markImageFiles(request.markImages) } : {}),
          progress: null,
          reserved_credits: cost,
          credits: 0,
          charged_at: null,
          created_at: created.toISOString(),
          started_at: null,
          finished_at: null,
          result: null,
          error: null,
          callback_url: request.callbackUrl,
          idempotency_key: request.idempotencyKey,
          request_fingerprint: request.fingerprint,
        };
        // With `wait`, the start is written with the end when that comes within a second or so
        // (one durable write for both instead of two); see `answer`.
        await store.insertConversion(record, { deferred: request.wait > 0 });
        // The conversion holds the place and its credits from here on.
        hold?.release();
        return { record, replayed: false, wait: request.wait };
      });
      if (!outcome.replayed) {
        kept = true;
        // Work starts at once, while the record goes to disk: a worker need not sit idle for an
        // fsync. The answer still waits for the flush, here or (with `wait`) in `answer`: a crash
        // right after the 202 must not lose the conversion (and a crash before it loses only
        // work nobody was told about).
        this.queue.push(outcome.record.id, this.jobOwner(account));
        if (outcome.wait === 0) await this.store.flush();
      }
      return outcome;
    } finally {
      hold?.release();
      if (adopted === null) for (const path of [...input.files.filter(spooledOnDisk).map((file) => file.path), ...unpacked]) await this.blobs.discardSpool(path);
      else if (!kept) await this.blobs.delete('inputs', adopted).catch(() => undefined);
    }
  }

  /**
   * The queue's owner of an account's jobs: a tenant (a plan with credits) may hold every worker
   * but one, so that another account's conversion always finds one soon; the box's owner
   * (unmetered) may hold them all.
   */
  jobOwner(account: AccountRecord): JobOwner {
    const unmetered = this.config.plans[account.plan].credits_type === 'unmetered';
    return { account: account.id, share: unmetered ? Infinity : Math.max(1, (this.pool?.workers ?? 1) - 1) };
  }

  /** The caller's conversion; another account's is indistinguishable from a missing one (404). */
  async get(account: AccountRecord, id: string): Promise<ConversionRecord> {
    const record = isConversionId(id) ? await this.store.getConversion(id) : undefined;
    if (!record || record.account_id !== account.id) throw new ApiError('not_found', { params: { resource: 'conversion' } });
    return this.expireIfDue(record);
  }

  /**
   * `get`'s record from what the store holds in memory now (StorePeek): no promise, no copy (the
   * store's own, never to be changed). Undefined whenever that cannot be said at once: not in
   * memory, not the account's (`get` says not_found), or its result due to expire (`get` expires it).
   */
  getNow(account: Readonly<AccountRecord>, id: string): Readonly<ConversionRecord> | undefined {
    const record = isConversionId(id) ? this.peek?.conversion(id) : undefined;
    return record && record.account_id === account.id && !this.expiryDue(record) ? record : undefined;
  }

  /**
   * What a submission answers: its end when that comes within the request's `wait` (told once on
   * disk, as every end is), else the conversion as it is then, once it is on disk: a 202 is a
   * promise that a crash does not undo. A submission with `wait` was inserted deferred, and a
   * replay may find the original's write still under way (or failed, to be tried again): both
   * wait here for what the store holds of the conversion to be on disk. A new one without `wait`
   * was flushed by `create`.
   */
  async answer(outcome: CreateOutcome, signal?: AbortSignal): Promise<ConversionRecord> {
    const record = await this.waitForEnd(outcome.record, outcome.wait, signal);
    if (outcome.replayed || (outcome.wait > 0 && !END_STATUSES.has(record.status))) await this.store.flush({ conversion: record.id });
    return record;
  }

  /** Waits up to `seconds` for an end state; returns the record as it is then. */
  async waitForEnd(record: ConversionRecord, seconds: number, signal?: AbortSignal): Promise<ConversionRecord> {
    if (seconds <= 0) return record;
    // An end read from memory may not be on disk yet (its group commit under way): told only once it is.
    if (END_STATUSES.has(record.status)) return this.onDisk(record);
    const waiter = this.events.waitFor(record.id, seconds * 1000, signal);
    // The state may have changed between the read and the subscription: read once more.
    const current = await this.store.getConversion(record.id);
    if (current && END_STATUSES.has(current.status)) {
      waiter.cancel();
      return this.onDisk(current);
    }
    const ended = await waiter.ended;
    if (ended) return ended;
    const now = (await this.store.getConversion(record.id)) ?? record;
    // Ended since the wait ran out: its end may still be on its way to disk.
    return END_STATUSES.has(now.status) ? this.onDisk(now) : now;
  }

  /** `record` once what the store holds is on disk (a store that cannot write: as it is, as a poll would read it). */
  private async onDisk(record: ConversionRecord): Promise<ConversionRecord> {
    await this.store.flush().catch(() => undefined);
    return record;
  }

  async list(account: AccountRecord, query: { status?: unknown; cursor?: unknown; limit?: unknown }, baseUrl = this.config.baseUrl): Promise<ListPage> {
    const problems: Parameters<typeof validationError>[0] = {};
    let status: ConversionStatus | undefined;
    if (query.status !== undefined && query.status !== '') {
      if (isStatus(query.status)) status = query.status;
      else problems.status = { reason: 'not_allowed', params: { values: 'queued, fetching, processing, succeeded, failed, cancelled, expired' } };
    }
    let limit = DEFAULT_PAGE;
    if (query.limit !== undefined && query.limit !== '') {
      const parsed = typeof query.limit === 'string' && /^\d+$/.test(query.limit) ? Number(query.limit) : NaN;
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > MAX_PAGE) problems.limit = { reason: 'out_of_range', params: { min: 1, max: MAX_PAGE } };
      else limit = parsed;
    }
    let before: string | undefined;
    if (query.cursor !== undefined && query.cursor !== '') {
      before = typeof query.cursor === 'string' ? decodeCursor(query.cursor) : undefined;
      if (!before) problems.cursor = { reason: 'invalid_value', params: { text: 'is not a cursor returned by this endpoint' } };
    }
    if (Object.keys(problems).length > 0) throw validationError(problems);
    // One extra row tells whether another page exists without a second query.
    const rows = await this.store.listConversions({ accountId: account.id, status, before, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map((record) => this.publicView(record, baseUrl)),
      next_cursor: rows.length > limit && last ? encodeCursor(last.id) : null,
    };
  }

  /** DELETE: cancels active work, or deletes a succeeded result (-> expired, expires_at now); 409 otherwise. */
  async delete(account: AccountRecord, id: string): Promise<ConversionRecord> {
    const owned = await this.get(account, id);
    let abortRunning = false;
    const updated = await this.store.exclusive(`conversion:${owned.id}`, async (store) => {
      const record = (await store.getConversion(owned.id))!;
      if (ACTIVE_STATUSES.has(record.status)) {
        abortRunning = record.status !== 'queued' || !this.queue.remove(record.id);
        return this.finish(record, { status: 'cancelled', progress: record.progress }, store);
      }
      if (record.status === 'succeeded') {
        await this.blobs.delete('results', record.id);
        // Deleted is expired early: the result says when it stopped being there, as one that ran
        // out does, and never again a future expires_at beside a download that answers 410.
        const result = record.result ? { ...record.result, expires_at: this.now().toISOString() } : null;
        const expired = await store.updateConversion(record.id, { status: 'expired', result });
        return expired!;
      }
      throw new ApiError('invalid_state', { params: { status: record.status }, details: { status: record.status } });
    });
    if (abortRunning && !(await this.pool?.abort(updated.id, 'cancelled'))) this.cancelElsewhere?.(updated.id);
    await this.store.flush();
    return updated;
  }

  /**
   * `checkFile`: the caller reads the file other than through `open`/`readAll` (a HEAD opens
   * nothing, the CLI copies `localPath`), so whether it is still there is asked of the disk or
   * the bucket first. Otherwise the size is the one the success recorded (each engine's count of
   * the bytes it wrote, shown to clients as `result.size`; a result is written once): a file gone
   * since is found by opening it, 410 all the same, without a stat (on a bucket, a HEAD request)
   * before every download.
   */
  async download(account: AccountRecord, id: string, options: { checkFile?: boolean } = {}): Promise<DownloadHandle> {
    const record = await this.get(account, id);
    if (record.status === 'expired') throw new ApiError('expired');
    if (record.status !== 'succeeded' || !record.result) throw new ApiError('not_ready');
    const size = options.checkFile ? await this.blobs.size('results', record.id) : record.result.size;
    if (size === null) throw new ApiError('expired');
    return {
      record, size, open: (range) => this.blobs.openRead('results', record.id, range), readAll: () => this.blobs.readAll('results', record.id, size),
      localPath: this.blobs.localPath('results', record.id),
    };
  }

  listFormats(): FormatListing {
    return {
      data: this.registry.sources().map((source) => ({
        source,
        targets: this.registry.targetsOf(source).map((pair) => pair.target),
      })),
    };
  }

  /** The option that adds a step (OCR) says what the conversion then costs: its weight is the step's. */
  private chargedLabel(option: OptionDescriptor, pair: ConversionPair): OptionDescriptor {
    if (option.name !== pair.withOption?.option) return option;
    const weight = this.registry.creditWeight(pair.withOption.pair);
    return { ...option, label: `${option.label} (credit weight ${weight} instead of ${this.registry.creditWeight(pair)})` };
  }

  formatDetails(account: AccountRecord, rawSource: string): FormatDetails {
    const source = this.registry.normalize(rawSource);
    const pairs = source ? this.registry.targetsOf(source) : [];
    if (!source || pairs.length === 0) throw new ApiError('not_found', { params: { resource: 'source format' } });
    const plan = this.config.plans[account.plan];
    return {
      source,
      data: pairs.map((pair) => ({
        target: pair.target,
        max_upload_mb: plan.max_upload_mb,
        credit_weight: this.registry.creditWeight(pair),
        options: pair.withOption ? pair.options.map((option) => this.chargedLabel(option, pair)) : pair.options,
        variants: pair.variants,
      })),
    };
  }

  /**
   * Moves a conversion to an end state (caller holds its lock): releases the reservation, drops
   * the input, wakes waiters and subscribers (webhooks).
   */
  async finish(record: ConversionRecord, patch: Partial<ConversionRecord>, store: Store = this.store): Promise<ConversionRecord> {
    if (patch.status) assertTransition(record.id, record.status, patch.status);
    const updated = await store.updateConversion(record.id, {
      ...patch,
      // A password, and an input kept in the record, no longer than the conversion needs them.
      secret_options: undefined,
      input_bytes: undefined,
      reserved_credits: 0,
      finished_at: this.now().toISOString(),
    });
    const ended = updated!;
    // Told once the end state is on disk (after the commit on PostgreSQL, after the group commit
    // that writes it on lowdb): a `wait` answered earlier, or a webhook sent, could tell a client
    // of an end that a crash a moment later undoes (the conversion found active, run again). A
    // store that cannot write is told about all the same: the waiter gets what a poll would read.
    const announce = () => {
      void this.store.flush().then(() => {
        this.events.emit(ended);
        // The input goes only once the end state is on disk: after a crash before that, the
        // conversion is still active on disk and is run again from its input.
        // (An input kept in the record went with the end state itself.)
        if (record.input_bytes === undefined) void this.blobs.delete('inputs', record.id).catch(() => undefined);
      }, () => this.events.emit(ended));
    };
    if (store.afterCommit) store.afterCommit(announce);
    else announce();
    return ended;
  }

  /** The time as ISO 8601, made once per millisecond: every poll compares it with the result's expiry (toISOString formats through printf). */
  private nowIso(): string {
    const now = this.now().getTime();
    if (now !== this.isoAt) {
      this.isoAt = now;
      this.iso = new Date(now).toISOString();
    }
    return this.iso;
  }

  private async expireIfDue(record: ConversionRecord): Promise<ConversionRecord> {
    return this.expiryDue(record) ? this.expire(record.id) : record;
  }

  /** A succeeded conversion whose result's time is up (read now, it is expired first). */
  private expiryDue(record: Readonly<ConversionRecord>): boolean {
    return record.status === 'succeeded' && !!record.result && record.result.expires_at <= this.nowIso();
  }

  private async expire(id: string): Promise<ConversionRecord> {
    return this.store.exclusive(`conversion:${id}`, async (store) => {
      const current = (await store.getConversion(id))!;
      if (current.status !== 'succeeded') return current;
      await this.blobs.delete('results', id);
      return (await store.updateConversion(id, { status: 'expired' }))!;
    });
  }

  /**
   * Expires results past `expires_at` (deleting their files), prunes old history, and removes the
   * web pages' sign-in links and sessions that expired (worth nothing already; only their records
   * go). Each step holds its own lock (a conversion's, the prune's: advisory locks on PostgreSQL),
   * so several nodes sweeping at once expire and prune each thing once; no transaction is held
   * across the whole sweep (it deletes files from a bucket). A sweep still running when the next
   * is due here is not started twice.
   */
  async sweep(): Promise<{ expired: number; pruned: number }> {
    if (this.sweeping) return this.sweeping;
    this.sweeping = this.sweepOnce().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private sweeping: Promise<{ expired: number; pruned: number }> | null = null;

  private async sweepOnce(): Promise<{ expired: number; pruned: number }> {
    const now = this.now().toISOString();
    const due = await this.store.conversionsExpiringBy(now);
    for (const record of due) await this.expire(record.id);
    const cutoff = new Date(this.now().getTime() - this.config.retentionDays * 86_400_000).toISOString();
    const pruned = await this.store.pruneFinishedBefore(cutoff);
    await this.store.pruneWebTokens(now);
    await this.store.pruneRateBuckets?.();
    return { expired: due.length, pruned };
  }
}

export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string | undefined {
  if (cursor.length > 100) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return isConversionId(id) ? id : undefined;
}
