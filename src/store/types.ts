import type { AccountRecord, ApiKeyRecord } from '../model/account.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import type { ConversionStatus } from '../model/status.ts';

import type { Settings } from '../model/account.ts';

/** What a store holds before the switch was ever set. */
export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({ maintenance: Object.freeze({ enabled: false, retry_after: 300 }) });
/** An idempotency key answers with its conversion for this long (spec: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface InsertOptions {
  /**
   * The new conversion may reach the disk with the next write of its file (within about a
   * second) rather than with the next `flush()`. For a submission with `wait`, whose client is
   * told nothing before the end (then written with the start in one write) or before the wait
   * runs out (`flush({ conversion })` first): a crash before either loses only work nobody was
   * told of, and leaves nothing to run again. PostgreSQL commits it at once.
   */
  deferred?: boolean;
}

export interface FlushOptions {
  /** Also this conversion's deferred writes (its deferred insert, its progress): on disk when this resolves. */
  conversion?: string;
}

export interface UpdateOptions {
  /**
   * The change may reach the disk later than `flush()` (progress, `processing`): losing it in a
   * crash changes nothing, because recovery re-queues active conversions anyway. On PostgreSQL
   * such a commit does not wait for the WAL's flush (it is lost only if the database server
   * itself crashes within a fraction of a second).
   */
  deferred?: boolean;
  /**
   * The change applies only while the conversion is active (queued, fetching, processing): a
   * progress write that reaches the store after the conversion ended changes nothing (on
   * PostgreSQL it may commit after the end's transaction on another connection).
   */
  whileActive?: boolean;
}

/** One UTC day of an account's chart: conversions made and credits charged that day. */
export interface DayUsage {
  /** YYYY-MM-DD (UTC). */
  day: string;
  conversions: number;
  credits: number;
}

export interface ListQuery {
  accountId: string;
  status?: ConversionStatus;
  /** Return conversions strictly older than this id (ids sort by creation time). */
  before?: string;
  limit: number;
}

/** A webhook delivery, persisted so retries survive restarts. */
export interface DeliveryRecord {
  id: string;
  conversion_id: string;
  account_id: string;
  event: 'conversion.succeeded' | 'conversion.failed';
  url: string;
  /** The exact body bytes that are signed and sent, as UTF-8 text. */
  body: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
}

/**
 * A sign-in link or a session of the web face: server-side records, so
 * that any node honours them. Only the SHA-256 of the token the browser holds is kept; the token
 * itself is shown once (the link) or lives only in the browser's cookie (the session).
 */
export interface WebTokenRecord {
  /** SHA-256 (hex) of the token. */
  hash: string;
  kind: 'login_link' | 'session';
  account_id: string;
  created_at: string;
  /** After this instant the token is worth nothing (the service checks; pruning removes it). */
  expires_at: string;
  /** A session's token for its forms and calls (CSRF), compared in constant time; absent on a link. */
  csrf?: string;
}

export interface DeliveryAttempt {
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * What a store holds in memory now, read at once: no promise, no copy (what it gives is the
 * store's own and must not be changed, nor kept past the moment). Each answers undefined where
 * the store would have to ask further (nothing held, or held past the time it may be trusted);
 * the caller then takes the async way, which decides everything that is refused or missing. The
 * hot read (daemon/http/hot-read.ts) answers a poll from these without waiting.
 */
export interface StorePeek {
  settings(): Readonly<Settings> | undefined;
  apiKeyByHash(hash: string): Readonly<ApiKeyRecord> | undefined;
  account(id: string): Readonly<AccountRecord> | undefined;
  conversion(id: string): Readonly<ConversionRecord> | undefined;
}

/**
 * The persistence seam (lowdb, or PostgreSQL for several nodes). Reads are served from memory by
 * the lowdb implementation; writes are durable once `flush()` resolves. Every method is async so
 * that a networked store can implement the same contract; `peek` is the one way to read at once.
 */
export interface Store {
  /** Absent: every read waits (a store bound to a transaction reads fresh). */
  readonly peek?: StorePeek;
  getConversion(id: string): Promise<ConversionRecord | undefined>;
  insertConversion(record: ConversionRecord, options?: InsertOptions): Promise<void>;
  /**
   * False while conversion `id` is in none of the store's files: inserted `deferred`, its file not
   * written since (or a store that keeps nothing on disk). Absent (PostgreSQL: a row is committed
   * by its insert): always true.
   */
  written?(id: string): boolean;
  /** Applies a patch and returns the updated record (undefined if it does not exist). */
  updateConversion(id: string, patch: Partial<ConversionRecord>, options?: UpdateOptions): Promise<ConversionRecord | undefined>;
  listConversions(query: ListQuery): Promise<ConversionRecord[]>;
  findByIdempotencyKey(accountId: string, key: string): Promise<ConversionRecord | undefined>;
  /** Conversions in one of the given states, oldest first (queue recovery, sweeper). */
  conversionsWithStatus(statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]>;
  /** The bytes of every result that can still be downloaded (succeeded conversions'), summed where the records are. */
  resultBytes(): Promise<number>;
  /**
   * Conversions in one of `statuses` (end states) that ended at or after `isoTime` (their
   * `finished_at`), in the order they ended: start-up recovery reads the recent ends only, not a
   * long history (PostgreSQL: through an index on the end time).
   */
  conversionsEndedSince(isoTime: string, statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]>;
  /** Succeeded conversions whose result expires at or before `isoTime`. */
  conversionsExpiringBy(isoTime: string): Promise<ConversionRecord[]>;
  /** Number of the account's conversions in the given states. */
  countActive(accountId: string): Promise<number>;
  /**
   * Both sums the balance is made of, read at one moment (a conversion that ends between two
   * separate reads would be in neither: no longer reserved, not yet seen charged): the credits
   * charged at or after `sinceIso`, and the `reserved_credits` of the account's active conversions.
   */
  creditSums(accountId: string, sinceIso: string): Promise<{ charged: number; reserved: number }>;
  /**
   * The sums of the account page's chart, over the account's conversions created at or after
   * `sinceIso`: how many were made on each UTC day (by `created_at`), and the credits charged on
   * each UTC day (by `charged_at`). Days with neither are absent; in no particular order.
   * PostgreSQL: one GROUP BY in the database.
   */
  usageByDay(accountId: string, sinceIso: string): Promise<DayUsage[]>;
  /**
   * The credits charged to each account at or after its own instant (its credit period's start),
   * for many accounts at once (the owner's page): one statement on PostgreSQL. Every id asked for
   * is in the map, 0 when nothing was charged.
   */
  chargedSince(periods: readonly { accountId: string; sinceIso: string }[]): Promise<Map<string, number>>;
  /** How many of the account's conversions were created at or after `sinceMs`. */
  countCreatedSince(accountId: string, sinceMs: number): Promise<number>;
  /** The `engine_ms` of the account's conversions created at or after `sinceMs`, added up. */
  engineTimeSince(accountId: string, sinceMs: number): Promise<number>;
  /** Creation time (ms) of the account's n-th newest conversion (n = 1 is the newest). */
  createdAtOfNewest(accountId: string, n: number): Promise<number | undefined>;
  /** Removes ended conversions that finished before `isoTime`; returns how many went. */
  pruneFinishedBefore(isoTime: string): Promise<number>;

  getAccount(id: string): Promise<AccountRecord | undefined>;
  listAccounts(): Promise<AccountRecord[]>;
  /** Up to `limit` accounts whose name is exactly `name`, by an index (sign-in by name). */
  accountsNamed(name: string, limit: number): Promise<AccountRecord[]>;
  putAccount(record: AccountRecord): Promise<void>;

  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(accountId: string): Promise<ApiKeyRecord[]>;
  putApiKey(record: ApiKeyRecord): Promise<void>;

  getSettings(): Promise<Settings>;
  putSettings(settings: Settings): Promise<void>;

  /** Adds or replaces the token with this hash. */
  putWebToken(record: WebTokenRecord): Promise<void>;
  getWebToken(hash: string): Promise<WebTokenRecord | undefined>;
  /** Removes the token and returns it, to exactly one caller across every node (a link is used once). */
  takeWebToken(hash: string): Promise<WebTokenRecord | undefined>;
  /** Removes every token of this kind of the account (signing out everywhere, a new link); how many went. */
  deleteWebTokens(accountId: string, kind: WebTokenRecord['kind']): Promise<number>;
  /** Removes the tokens that expired before `isoTime`; how many went. */
  pruneWebTokens(isoTime: string): Promise<number>;

  getDelivery(id: string): Promise<DeliveryRecord | undefined>;
  /** The account's `limit` latest deliveries, newest first (the account page). */
  recentDeliveries(accountId: string, limit: number): Promise<DeliveryRecord[]>;
  /**
   * Adds a new delivery unless its conversion has one for its event already, and returns the one
   * the store keeps: `record`, or the one found. One per conversion and event, across every node
   * (PostgreSQL: a unique index decides), so the receiver never gets an end twice under two ids.
   */
  addDelivery(record: DeliveryRecord): Promise<DeliveryRecord>;
  /**
   * Writes a delivery by its id: the outcome of an attempt (a replacement), or an import's record.
   * Not for new deliveries (`addDelivery`): on PostgreSQL a second delivery of a conversion and
   * event under another id is refused.
   */
  putDelivery(record: DeliveryRecord): Promise<void>;
  listDeliveries(filter: { conversionId?: string; status?: DeliveryRecord['status'] }): Promise<DeliveryRecord[]>;

  /**
   * Runs `work` holding `key` against every process that shares this store (an account's
   * submission checks and insert: idempotency, limits and credits are one step across nodes).
   * `work` uses the store it is given: in PostgreSQL the transaction that holds the lock, whose
   * writes commit when `work` resolves and not at all when it throws.
   */
  exclusive<T>(key: string, work: (store: Store) => Promise<T>, options?: Pick<UpdateOptions, 'deferred'>): Promise<T>;

  /**
   * Runs `callback` once what this store has written is committed: at the end of the `exclusive`
   * transaction it belongs to (PostgreSQL), at once elsewhere (absent). What others may read
   * (waiters woken, webhooks sent, an input removed) must not run ahead of the commit.
   */
  afterCommit?(callback: () => void): void;

  /** Forgets counters that hold nothing any more (PostgreSQL: the shared rate buckets); absent elsewhere. */
  pruneRateBuckets?(): Promise<number>;

  /** The database answers (PostgreSQL: for /readyz); absent where there is nothing to ask. */
  ping?(): Promise<void>;

  /**
   * Several nodes: takes delivery `id`'s next attempt for `node` until `untilMs` (epoch ms); false
   * while another live node holds it. With `attempts`, also false unless the delivery is still
   * pending with that many attempts (the caller's read is not stale: nobody sent it meanwhile).
   * Absent: one process sends every attempt itself.
   */
  claimDelivery?(id: string, node: string, untilMs: number, attempts?: number): Promise<boolean>;

  /**
   * Several nodes: in one statement, claims for `node` until `untilMs` at most `limit` pending
   * deliveries whose next attempt is due by `dueBy` (ISO) and that no live claim holds, and
   * returns them; with `own`, also every pending delivery `node` holds already, due or not, beyond
   * `limit` (a node restarted under its old id takes its retries back; such a claim is kept at
   * least as long as it was). Nothing else is read: the deliveries other nodes hold never leave
   * the database.
   * Absent: one process sends every attempt itself.
   */
  claimPendingDeliveries?(node: string, claim: { dueBy: string; untilMs: number; limit: number; own?: boolean }): Promise<DeliveryRecord[]>;

  /** Resolves when every write made so far is on disk (a deferred one only as `options` asks). */
  flush(options?: FlushOptions): Promise<void>;
  close(): Promise<void>;
}
