import pg from 'pg';
import type { AccountRecord, ApiKeyRecord, Settings } from '../../model/account.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import { ACTIVE_STATUSES, type ConversionStatus } from '../../model/status.ts';
import { conversionIdFloor, conversionIdTime } from '../../model/ids.ts';
import { DEFAULT_SETTINGS, IDEMPOTENCY_TTL_MS, type DayUsage, type DeliveryRecord, type ListQuery, type Store, type UpdateOptions, type WebTokenRecord } from '../types.ts';
import { migrate } from './migrate.ts';
import { SecondCache } from './second-cache.ts';
import { reasonOf, StoreUnavailableError } from '../unavailable.ts';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (libpq's parameters, e.g. `?options=-c search_path=x`). */
  url: string;
  /** Connections of this process (default 10). */
  poolSize?: number;
  /**
   * The node lock this process holds for as long as the store is open (see NODE_LOCK); none for
   * the admin commands, which may run beside daemons. `sole`: a daemon alone with the database
   * (no bucket: its files are on its own disk, it recovers every running conversion at start and
   * forgets every lease), or `convd store import`, which must not write under a running node;
   * refused while any daemon runs. `cluster`: a node of several on the database and a bucket;
   * any number of them at once, refused while a sole node (or an import) holds the database.
   */
  nodeLock?: NodeLockMode;
  /** The node lock's connection was lost (the database restarted or dropped it): the lock is gone too. */
  onConnectionLost?: (error: Error) => void;
}

export type NodeLockMode = 'sole' | 'cluster';

/**
 * The advisory lock every daemon holds on a connection of its own for as long as it runs:
 * exclusive for a sole node (and an import), shared for the nodes of a cluster, so that one
 * excludes the other and a sole node excludes everything. Advisory locks are the database's, so
 * every lock key is taken within the schema's name: two convd on two schemas of one database are
 * two stores.
 */
const NODE_LOCK = 'convd:node';
/** An advisory lock's number for the key in $1, within the schema's name. */
const LOCK_KEY = "hashtextextended(current_schema() || ':' || $1, 0)";
const TRY_NODE_LOCK = `SELECT pg_try_advisory_lock(${LOCK_KEY}) AS locked`;
const TRY_NODE_LOCK_SHARED = `SELECT pg_try_advisory_lock_shared(${LOCK_KEY}) AS locked`;
const UNLOCK_NODE_LOCK_SHARED = `SELECT pg_advisory_unlock_shared(${LOCK_KEY})`;

/**
 * Another daemon holds the database: `holder` says what runs there, as far as the lock tells
 * (`sole`: a daemon without a bucket, or an import; `cluster`: nodes of a cluster), `wanted`
 * what was refused.
 */
export class DatabaseInUseError extends StoreUnavailableError {
  constructor(readonly wanted: NodeLockMode, readonly holder: NodeLockMode) {
    super(`another convd daemon uses this database: ${inUseReason(wanted, holder)}`);
    this.name = 'DatabaseInUseError';
  }
}

function inUseReason(wanted: NodeLockMode, holder: NodeLockMode): string {
  if (wanted === 'cluster') {
    return 'a daemon without a bucket (or a `convd store import`) holds it alone; stop it before nodes with a bucket (--blob-url) start on it';
  }
  if (holder === 'cluster') {
    return 'nodes of a cluster (this database and a bucket) run on it; a daemon without the bucket cannot join them (give it the same --blob-url), and nothing that needs the database alone may run beside them';
  }
  return 'a daemon without a bucket (or a `convd store import`) holds it; one such daemon per database (admin commands may run beside it)';
}

/** host:port/database of a URL, without user or password, for messages. */
function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  } catch {
    return 'the database';
  }
}

/** Takes the transaction's advisory lock on a key (within the schema's name, see NODE_LOCK). */
const LOCK_SQL = `SELECT pg_advisory_xact_lock(${LOCK_KEY})`;
const ACTIVE = [...ACTIVE_STATUSES];
/** Connections of the relaxed pool (see PostgresStore.relaxed): single short statements (progress, claims, releases, NOTIFY). */
const RELAXED_POOL_SIZE = 3;
/**
 * Claims, leases and notifications are redone whatever a crash of the server loses: a claim lost
 * leaves the row queued (claimed again), a renewal is repeated a third of the lease later, a
 * release lost leaves a lease that runs out, a lost wake-up is covered by the workers' look every
 * few seconds.
 */
const DEFERRED: UpdateOptions = { deferred: true };

/** A pool or one of its clients inside a transaction: both answer queries. */
type Queryable = pg.Pool | pg.PoolClient;

interface Doc<T> {
  doc: T;
}

/**
 * The Store on PostgreSQL: every node that shares the database sees the
 * same accounts, keys, settings, conversions, deliveries and web sessions, and `exclusive` is a
 * transaction that holds an advisory lock, so an account's submission checks and insert are one
 * step across nodes. Every statement is parameterized and named (prepared once per connection);
 * no SQL is built from values. A write is committed when its call resolves (`flush` has nothing
 * left to do).
 */
export class PostgresStore implements Store {
  private constructor(
    private readonly db: Queryable,
    /** The pool this store owns and ends on close; null for a store bound to a transaction. */
    private readonly pool: pg.Pool | null,
    /** The connection that holds the node lock (PostgresStoreOptions.nodeLock), released on close. */
    private readonly nodeLock: pg.PoolClient | null = null,
    /** Inside a transaction: what runs once it commits (dropped if it rolls back). */
    private readonly committed: (() => void)[] | null = null,
    /** Shared by the store and its transactions; reads inside a transaction never use it. */
    private readonly hot: SecondCache = new SecondCache(),
    /**
     * Connections whose commits do not wait for the WAL's flush (synchronous_commit off), for
     * single statements nobody is told about (UpdateOptions.deferred): progress, claims, lease
     * releases, NOTIFY (a deferred `exclusive`, a conversion's start, sets it in its transaction).
     * Such a commit is visible at once and on disk within a fraction of a second; only a crash of
     * the database server in between loses it, and each of them is redone then (a queued
     * conversion is claimed again, a lease renewed). Null in a transaction.
     */
    private readonly relaxed: pg.Pool | null = null,
  ) {}

  /** Where a write that may be deferred goes: the relaxed pool outside a transaction. */
  private writer(options: UpdateOptions | undefined): Queryable {
    return options?.deferred === true && this.relaxed !== null ? this.relaxed : this.db;
  }

  /** A read every request makes: from the second cache outside transactions, fresh inside. */
  private cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    return this.pool === null ? load() : this.hot.get(key, load);
  }

  /**
   * Drops a cached read that a write here replaces: at once, and again once the write is
   * committed (inside a transaction, a read between the two still finds the old row and may keep it).
   */
  private forget(key: string): void {
    this.hot.drop(key);
    if (this.committed) this.afterCommit(() => this.hot.drop(key));
  }

  afterCommit(callback: () => void): void {
    if (this.committed) this.committed.push(callback);
    else callback();
  }

  /** Connects, applies the schema's missing steps, and checks that the database answers. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    // A pool that cannot hand out a connection within 10 s fails the request rather than hangs it.
    const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, application_name: 'convd', connectionTimeoutMillis: 10_000 });
    const relaxed = new pg.Pool({
      connectionString: options.url, max: RELAXED_POOL_SIZE, application_name: 'convd', connectionTimeoutMillis: 10_000,
      options: '-c synchronous_commit=off',
    });
    // An idle connection the server drops (restart, network) must not take the process down.
    pool.on('error', () => undefined);
    relaxed.on('error', () => undefined);
    let nodeLock: pg.PoolClient | null = null;
    try {
      // Not reached at all (refused, unknown host, password, no such database): one line naming where.
      await pool.query('SELECT 1').catch((error: unknown) => {
        throw new StoreUnavailableError(`cannot use the database at ${describeDatabase(options.url)}: ${reasonOf(error)}`, { cause: error });
      });
      // The node lock first: a newer convd started beside a running one must not change its schema.
      if (options.nodeLock) {
        nodeLock = await pool.connect();
        // Checked out for good, so the pool's own error listener is off it: a dropped connection
        // (a restart of PostgreSQL, a failover) is said here, not thrown as an uncaught 'error'.
        nodeLock.on('error', (error) => options.onConnectionLost?.(error));
        await takeNodeLock(nodeLock, options.nodeLock);
      }
      await migrate(pool);
    } catch (error) {
      nodeLock?.release();
      await pool.end().catch(() => undefined);
      await relaxed.end().catch(() => undefined);
      throw error;
    }
    return new PostgresStore(pool, pool, nodeLock, null, new SecondCache(), relaxed);
  }

  private async rows<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    return (await this.db.query<T & pg.QueryResultRow>({ name, text, values })).rows;
  }

  private async docs<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    return (await this.rows<Doc<T>>(name, text, values)).map((row) => row.doc);
  }

  private async one<T>(name: string, text: string, values: unknown[]): Promise<T | undefined> {
    return (await this.docs<T>(name, text, values))[0];
  }

  private async count(name: string, text: string, values: unknown[]): Promise<number> {
    const [row] = await this.rows<{ n: string | number | null }>(name, text, values);
    return Number(row?.n ?? 0);
  }

  async exclusive<T>(key: string, work: (store: Store) => Promise<T>, options?: UpdateOptions): Promise<T> {
    if (this.pool === null) {
      // Already in a transaction: the same connection takes the lock too (it is re-entrant).
      await this.db.query({ name: 'convd-lock', text: LOCK_SQL, values: [key] });
      return work(this);
    }
    const client = await this.pool.connect();
    // Checked out, the client has no listener of the pool's: a connection dropped mid-transaction
    // fails the query in flight, and must not also be thrown as an uncaught 'error'.
    const onError = () => undefined;
    client.on('error', onError);
    let broken = false;
    try {
      await client.query('BEGIN');
      // A step nobody is told about commits without waiting for the WAL (see `relaxed`), on a
      // connection of the main pool: the small relaxed pool takes single statements only.
      if (options?.deferred === true) await client.query('SET LOCAL synchronous_commit TO off');
      await client.query({ name: 'convd-lock', text: LOCK_SQL, values: [key] });
      const committed: (() => void)[] = [];
      const result = await work(new PostgresStore(client, null, null, committed, this.hot));
      await client.query('COMMIT');
      for (const callback of committed) callback();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  async getConversion(id: string): Promise<ConversionRecord | undefined> {
    return this.one('convd-conversion', 'SELECT doc FROM convd_conversions WHERE id = $1', [id]);
  }

  async insertConversion(record: ConversionRecord): Promise<void> {
    if (record.idempotency_key) {
      // An expired key may be used again: the old conversion keeps it in its record, not in the index.
      const staleBefore = new Date(Date.parse(record.created_at) - IDEMPOTENCY_TTL_MS).toISOString();
      await this.db.query({
        name: 'convd-idem-release',
        text: 'UPDATE convd_conversions SET idem_key = NULL WHERE account_id = $1 AND idem_key = $2 AND created_at <= $3',
        values: [record.account_id, record.idempotency_key, staleBefore],
      });
    }
    // A key past its 24 hours (an imported history) is in the record only, not in the unique index.
    const live = record.idempotency_key && Date.now() - Date.parse(record.created_at) < IDEMPOTENCY_TTL_MS ? record.idempotency_key : null;
    await this.db.query({
      name: 'convd-conversion-insert',
      text: 'INSERT INTO convd_conversions (id, doc, idem_key) VALUES ($1, $2, $3)',
      values: [record.id, toJson(record), live],
    });
  }

  async updateConversion(id: string, patch: Partial<ConversionRecord>, options?: UpdateOptions): Promise<ConversionRecord | undefined> {
    const { id: _id, account_id: _owner, ...rest } = patch;
    // A field set to undefined is removed (as Object.assign + JSON would drop it); the rest is merged.
    const removed = Object.entries(rest).filter(([, value]) => value === undefined).map(([key]) => key);
    const [row] = (await this.writer(options).query<Doc<ConversionRecord>>(options?.whileActive
      ? {
        name: 'convd-conversion-update-active',
        text: 'UPDATE convd_conversions SET doc = (doc - $2::text[]) || $3::jsonb WHERE id = $1 AND status = ANY($4::text[]) RETURNING doc',
        values: [id, removed, toJson(rest), ACTIVE],
      }
      : { name: 'convd-conversion-update', text: 'UPDATE convd_conversions SET doc = (doc - $2::text[]) || $3::jsonb WHERE id = $1 RETURNING doc', values: [id, removed, toJson(rest)] })).rows;
    // Ended meanwhile (whileActive): left as it is.
    return row ? row.doc : options?.whileActive ? this.getConversion(id) : undefined;
  }

  async listConversions(query: ListQuery): Promise<ConversionRecord[]> {
    return this.docs('convd-conversion-list', `SELECT doc FROM convd_conversions
      WHERE account_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR id < $3)
      ORDER BY id DESC LIMIT $4`, [query.accountId, query.status ?? null, query.before ?? null, query.limit]);
  }

  async findByIdempotencyKey(accountId: string, key: string): Promise<ConversionRecord | undefined> {
    const liveSince = new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString();
    return this.one('convd-conversion-idem', 'SELECT doc FROM convd_conversions WHERE account_id = $1 AND idem_key = $2 AND created_at > $3', [
      accountId, key, liveSince,
    ]);
  }

  async conversionsWithStatus(statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    return this.docs('convd-conversion-status', 'SELECT doc FROM convd_conversions WHERE status = ANY($1::text[]) ORDER BY id', [[...statuses]]);
  }

  async resultBytes(): Promise<number> {
    // The sum in the database: at millions of results, their records never come over the wire.
    const [row] = await this.rows<{ bytes: string }>('convd-result-bytes', "SELECT coalesce(sum((doc->'result'->>'size')::bigint), 0)::text AS bytes FROM convd_conversions WHERE status = 'succeeded'", []);
    return Number(row?.bytes ?? 0);
  }

  async conversionsEndedSince(isoTime: string, statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    // Through the index on finished_at (schema step 6): the recent end of the history only.
    return this.docs('convd-conversion-ended-since', `SELECT doc FROM convd_conversions
      WHERE finished_at >= $1 AND status = ANY($2::text[]) ORDER BY finished_at, id`, [isoTime, [...statuses]]);
  }

  async conversionsExpiringBy(isoTime: string): Promise<ConversionRecord[]> {
    return this.docs('convd-conversion-expiring', "SELECT doc FROM convd_conversions WHERE status = 'succeeded' AND expires_at <= $1 ORDER BY expires_at", [isoTime]);
  }

  async countActive(accountId: string): Promise<number> {
    return this.count('convd-count-active', 'SELECT count(*) AS n FROM convd_conversions WHERE account_id = $1 AND status = ANY($2::text[])', [accountId, ACTIVE]);
  }

  async creditSums(accountId: string, sinceIso: string): Promise<{ charged: number; reserved: number }> {
    // One statement, one snapshot (READ COMMITTED takes one per statement).
    const [row] = await this.rows<{ charged: string | null; reserved: string | null }>('convd-credit-sums', `SELECT
      (SELECT sum(credits) FROM convd_conversions WHERE account_id = $1 AND charged_at >= $2) AS charged,
      (SELECT sum(reserved_credits) FROM convd_conversions WHERE account_id = $1 AND status = ANY($3::text[])) AS reserved`, [accountId, sinceIso, ACTIVE]);
    return { charged: Number(row?.charged ?? 0), reserved: Number(row?.reserved ?? 0) };
  }

  async usageByDay(accountId: string, sinceIso: string): Promise<DayUsage[]> {
    // One pass over the window's rows (through the index on the account's ids: ids sort by
    // creation), grouped twice: by the day made, and by the day charged. Times are ISO text in
    // UTC, so a day is the text's first ten characters.
    const rows = await this.rows<{ by_charge: number; day: string | null; made: string; credits: string | null }>('convd-usage-by-day', `
      SELECT grouping(left(created_at, 10)) AS by_charge, coalesce(left(created_at, 10), left(charged_at, 10)) AS day,
        count(*) AS made, sum(credits) AS credits
      FROM convd_conversions WHERE account_id = $1 AND id >= $2 AND created_at >= $3
      GROUP BY GROUPING SETS ((left(created_at, 10)), (left(charged_at, 10)))`, [accountId, conversionIdFloor(Date.parse(sinceIso)), sinceIso]);
    const days = new Map<string, DayUsage>();
    const dayOf = (day: string) => days.get(day) ?? days.set(day, { day, conversions: 0, credits: 0 }).get(day)!;
    for (const row of rows) {
      if (row.day === null) continue; // the conversions never charged
      if (Number(row.by_charge) === 0) dayOf(row.day).conversions += Number(row.made);
      else dayOf(row.day).credits += Number(row.credits ?? 0);
    }
    return [...days.values()];
  }

  async chargedSince(periods: readonly { accountId: string; sinceIso: string }[]): Promise<Map<string, number>> {
    // Each account's sum through the index on (account_id, charged_at), all in one statement.
    const rows = await this.rows<{ id: string; charged: string }>('convd-charged-since', `
      SELECT p.id, coalesce((SELECT sum(c.credits) FROM convd_conversions c WHERE c.account_id = p.id AND c.charged_at >= p.since), 0)::text AS charged
      FROM unnest($1::text[], $2::text[]) AS p(id, since)`, [periods.map((p) => p.accountId), periods.map((p) => p.sinceIso)]);
    return new Map(rows.map((row) => [row.id, Number(row.charged)]));
  }

  async countCreatedSince(accountId: string, sinceMs: number): Promise<number> {
    return this.count('convd-count-since', 'SELECT count(*) AS n FROM convd_conversions WHERE account_id = $1 AND id >= $2', [accountId, conversionIdFloor(sinceMs)]);
  }

  async engineTimeSince(accountId: string, sinceMs: number): Promise<number> {
    return this.count('convd-engine-time', "SELECT sum((doc->>'engine_ms')::bigint) AS n FROM convd_conversions WHERE account_id = $1 AND id >= $2", [accountId, conversionIdFloor(sinceMs)]);
  }

  async createdAtOfNewest(accountId: string, n: number): Promise<number | undefined> {
    const [row] = await this.rows<{ id: string }>('convd-nth-newest', 'SELECT id FROM convd_conversions WHERE account_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1', [accountId, n - 1]);
    return row ? conversionIdTime(row.id) : undefined;
  }

  async pruneFinishedBefore(isoTime: string): Promise<number> {
    // Charges of the account's current period stay: they are its balance.
    return this.exclusive('prune', async (store) => {
      const db = (store as PostgresStore).db;
      const pruned = await db.query<{ id: string }>({
        name: 'convd-prune',
        text: `DELETE FROM convd_conversions c
          WHERE c.status IN ('failed', 'cancelled', 'expired') AND c.finished_at < $1
            AND NOT (c.charged_at IS NOT NULL AND c.charged_at >= coalesce((SELECT a.doc->>'credits_base_at' FROM convd_accounts a WHERE a.id = c.account_id), ''))
          RETURNING c.id`,
        values: [isoTime],
      });
      const ids = pruned.rows.map((row) => row.id);
      if (ids.length > 0) {
        await db.query({ name: 'convd-prune-deliveries', text: "DELETE FROM convd_deliveries WHERE conversion_id = ANY($1::text[]) AND status <> 'pending'", values: [ids] });
      }
      return ids.length;
    });
  }

  async getAccount(id: string): Promise<AccountRecord | undefined> {
    return this.cached(`account:${id}`, () => this.one('convd-account', 'SELECT doc FROM convd_accounts WHERE id = $1', [id]));
  }

  async accountsNamed(name: string, limit: number): Promise<AccountRecord[]> {
    // Through the index on the name (schema step 8), not a read of every account.
    return this.docs('convd-accounts-named', "SELECT doc FROM convd_accounts WHERE doc->>'name' = $1 ORDER BY id LIMIT $2", [name, limit]);
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.docs('convd-accounts', 'SELECT doc FROM convd_accounts ORDER BY created_at, id', []);
  }

  async putAccount(record: AccountRecord): Promise<void> {
    this.forget(`account:${record.id}`);
    await this.db.query({
      name: 'convd-account-put',
      text: 'INSERT INTO convd_accounts (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [record.id, toJson(record)],
    });
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    return this.one('convd-key', 'SELECT doc FROM convd_api_keys WHERE id = $1', [id]);
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.cached(`key:${hash}`, () => this.one('convd-key-hash', 'SELECT doc FROM convd_api_keys WHERE hash = $1', [hash]));
  }

  async listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return this.docs('convd-keys', 'SELECT doc FROM convd_api_keys WHERE account_id = $1 ORDER BY id', [accountId]);
  }

  async putApiKey(record: ApiKeyRecord): Promise<void> {
    this.forget(`key:${record.hash}`);
    await this.db.query({
      name: 'convd-key-put',
      text: 'INSERT INTO convd_api_keys (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [record.id, toJson(record)],
    });
  }

  async getSettings(): Promise<Settings> {
    return this.cached('settings', async () => (await this.one<Settings>('convd-settings', 'SELECT doc FROM convd_settings WHERE id = 1', [])) ?? structuredClone(DEFAULT_SETTINGS));
  }

  async putSettings(settings: Settings): Promise<void> {
    this.forget('settings');
    await this.db.query({
      name: 'convd-settings-put',
      text: 'INSERT INTO convd_settings (id, doc) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [toJson(settings)],
    });
  }

  async putWebToken(record: WebTokenRecord): Promise<void> {
    await this.db.query({
      name: 'convd-web-token-put',
      text: `INSERT INTO convd_web_tokens (hash, doc, expires_at) VALUES ($1, $2, $3::timestamptz)
        ON CONFLICT (hash) DO UPDATE SET doc = EXCLUDED.doc, expires_at = EXCLUDED.expires_at`,
      values: [record.hash, toJson(record), record.expires_at],
    });
  }

  async getWebToken(hash: string): Promise<WebTokenRecord | undefined> {
    // Not through the second cache: a session ended on one node must end on all at once.
    return this.one('convd-web-token', 'SELECT doc FROM convd_web_tokens WHERE hash = $1', [hash]);
  }

  async takeWebToken(hash: string): Promise<WebTokenRecord | undefined> {
    // One statement: of nodes racing for a link, the row's lock lets one delete it and return it;
    // the others find it gone once that commits.
    return this.one('convd-web-token-take', 'DELETE FROM convd_web_tokens WHERE hash = $1 RETURNING doc', [hash]);
  }

  async deleteWebTokens(accountId: string, kind: WebTokenRecord['kind']): Promise<number> {
    return (await this.db.query({
      name: 'convd-web-tokens-delete', text: 'DELETE FROM convd_web_tokens WHERE account_id = $1 AND kind = $2', values: [accountId, kind],
    })).rowCount ?? 0;
  }

  async pruneWebTokens(isoTime: string): Promise<number> {
    return (await this.db.query({
      name: 'convd-web-tokens-prune', text: 'DELETE FROM convd_web_tokens WHERE expires_at < $1::timestamptz', values: [isoTime],
    })).rowCount ?? 0;
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    return this.one('convd-delivery', 'SELECT doc FROM convd_deliveries WHERE id = $1', [id]);
  }

  async addDelivery(record: DeliveryRecord): Promise<DeliveryRecord> {
    // The unique index on (conversion_id, event) decides between nodes adding the same delivery.
    // A conflict with a row another transaction commits meanwhile waits for that commit, but this
    // statement's snapshot does not see the row: a second statement reads it. (Gone again by
    // then, it was removed in between, by a prune: add anew.)
    for (let round = 0; round < 3; round++) {
      const added = await this.one<DeliveryRecord>('convd-delivery-add', `INSERT INTO convd_deliveries (id, doc) VALUES ($1, $2)
        ON CONFLICT (conversion_id, (doc->>'event')) DO NOTHING RETURNING doc`, [record.id, toJson(record)]);
      if (added) return added;
      const existing = await this.one<DeliveryRecord>('convd-delivery-of-event',
        "SELECT doc FROM convd_deliveries WHERE conversion_id = $1 AND doc->>'event' = $2", [record.conversion_id, record.event]);
      if (existing) return existing;
    }
    throw new Error(`the delivery of ${record.event} for ${record.conversion_id} could not be added nor found`);
  }

  async putDelivery(record: DeliveryRecord): Promise<void> {
    await this.db.query({
      name: 'convd-delivery-put',
      text: 'INSERT INTO convd_deliveries (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [record.id, toJson(record)],
    });
  }

  async recentDeliveries(accountId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.docs('convd-recent-deliveries', `SELECT doc FROM convd_deliveries
      WHERE doc->>'account_id' = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [accountId, limit]);
  }

  async listDeliveries(filter: { conversionId?: string; status?: DeliveryRecord['status'] }): Promise<DeliveryRecord[]> {
    return this.docs('convd-deliveries', `SELECT doc FROM convd_deliveries
      WHERE ($1::text IS NULL OR conversion_id = $1) AND ($2::text IS NULL OR status = $2) ORDER BY created_at, id`, [
      filter.conversionId ?? null, filter.status ?? null,
    ]);
  }

  // ------------------------------------------------------------------ the queue (PostgresJobSource)

  /**
   * Claims a queued conversion no live lease holds, skipping rows another node is claiming this
   * instant (`FOR UPDATE SKIP LOCKED`) and the accounts given (at their share of this node's
   * workers). Fair between accounts: each account's oldest queued conversion is a candidate, and
   * the one whose account runs the fewest conversions in the whole cluster goes first (then the
   * oldest), so an account with nothing running is never behind another's backlog. `idleOnly`
   * (the quick lane) takes only an account that runs nothing. The claim is a lease of `leaseMs`
   * that `renewLeases` extends.
   */
  async claimQueued(node: string, leaseMs: number, skipAccounts: readonly string[], idleOnly = false): Promise<{ id: string; account: string } | undefined> {
    // Relaxed: a claim lost with the server is a queued row claimed again (DEFERRED).
    const [row] = (await this.writer(DEFERRED).query<{ id: string; account: string }>({ name: 'convd-claim', text: `WITH heads AS (
        SELECT DISTINCT ON (account_id) id, account_id FROM convd_conversions
        WHERE status = 'queued' AND (lease_until IS NULL OR lease_until < now()) AND NOT (account_id = ANY($3::text[]))
        ORDER BY account_id, id
      ), ranked AS (
        SELECT heads.id, (SELECT count(*) FROM convd_conversions running
          WHERE running.account_id = heads.account_id
            AND (running.status IN ('fetching', 'processing') OR (running.status = 'queued' AND running.lease_until >= now()))) AS load
        FROM heads
      )
      UPDATE convd_conversions SET lease_node = $1, lease_until = now() + $2 * interval '1 millisecond'
      WHERE id = (
        SELECT c.id FROM convd_conversions c JOIN ranked ON ranked.id = c.id
        WHERE c.status = 'queued' AND (c.lease_until IS NULL OR c.lease_until < now()) AND (NOT $4::boolean OR ranked.load = 0)
        ORDER BY ranked.load, c.id LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
      RETURNING id, account_id AS account`, values: [node, leaseMs, [...skipAccounts], idleOnly] })).rows;
    return row;
  }

  /**
   * Extends the leases of the node's active conversions; how many it holds. On the main pool,
   * committed as any write: behind a queue of progress writes on the small relaxed pool, a late
   * renewal would let another node take a running conversion over.
   */
  async renewLeases(node: string, leaseMs: number): Promise<number> {
    return (await this.db.query({
      name: 'convd-renew',
      text: `UPDATE convd_conversions SET lease_until = now() + $2 * interval '1 millisecond'
        WHERE lease_node = $1 AND status = ANY($3::text[])`,
      values: [node, leaseMs, ACTIVE],
    })).rowCount ?? 0;
  }

  /** The job ended here (or went back to the queue on a stop): its claim is no one's. */
  async releaseLease(id: string, node: string): Promise<void> {
    await this.writer(DEFERRED).query({ name: 'convd-release', text: 'UPDATE convd_conversions SET lease_node = NULL, lease_until = NULL WHERE id = $1 AND lease_node = $2', values: [id, node] });
  }

  /**
   * Forgets every lease: at the start of the one daemon a database has, those are its dead
   * predecessor's (a conversion re-queued after a crash must be claimable at once).
   */
  async clearLeases(): Promise<void> {
    await this.db.query({ name: 'convd-clear-leases', text: 'UPDATE convd_conversions SET lease_node = NULL, lease_until = NULL WHERE lease_node IS NOT NULL', values: [] });
  }

  /**
   * Ends every lease `node` holds, at the start of a node restarted under its old id (nothing of
   * it runs any more): a queued conversion's claim is dropped (claimable at once), a running one's
   * lease is made to have run out (for `takeExpiredLease`, whose one winner re-queues it). How many.
   */
  async endLeasesOf(node: string): Promise<number> {
    return (await this.db.query({
      name: 'convd-end-leases-of',
      text: `UPDATE convd_conversions SET
          lease_node = CASE WHEN status = ANY($2::text[]) THEN lease_node END,
          lease_until = CASE WHEN status = ANY($2::text[]) THEN now() - interval '1 millisecond' END
        WHERE lease_node = $1`,
      values: [node, ACTIVE.filter((status) => status !== 'queued')],
    })).rowCount ?? 0;
  }

  /** Running conversions whose node stopped renewing their lease (it died): candidates for `takeExpiredLease`. */
  async expiredLeaseIds(): Promise<string[]> {
    return (await this.rows<{ id: string }>('convd-expired-leases', 'SELECT id FROM convd_conversions WHERE status = ANY($1::text[]) AND lease_until < now() ORDER BY id LIMIT 100', [ACTIVE])).map((row) => row.id);
  }

  /** Takes a dead node's running conversion over: true for the one node whose update found the lease still run out. */
  async takeExpiredLease(id: string): Promise<boolean> {
    const result = await this.db.query({
      name: 'convd-take-expired',
      text: 'UPDATE convd_conversions SET lease_node = NULL, lease_until = NULL WHERE id = $1 AND status = ANY($2::text[]) AND lease_until < now()',
      values: [id, ACTIVE],
    });
    return (result.rowCount ?? 0) === 1;
  }

  async claimDelivery(id: string, node: string, untilMs: number, attempts?: number): Promise<boolean> {
    const result = await this.db.query({
      name: 'convd-claim-delivery',
      text: `UPDATE convd_deliveries SET lease_node = $2, lease_until = to_timestamp($3::double precision / 1000)
        WHERE id = $1 AND (lease_node IS NULL OR lease_node = $2 OR lease_until < now())
          AND ($4::int IS NULL OR (status = 'pending' AND jsonb_array_length(doc->'attempts') = $4::int))`,
      values: [id, node, untilMs, attempts ?? null],
    });
    return (result.rowCount ?? 0) === 1;
  }

  async claimPendingDeliveries(node: string, claim: { dueBy: string; untilMs: number; limit: number; own?: boolean }): Promise<DeliveryRecord[]> {
    // The due ones through the index of pending deliveries by their next attempt (schema step 8),
    // not every pending one; a due one a live node holds is that node's to send. A node's own
    // (at its restart) through no index: once per start. Those were timers in its memory before.
    return this.docs('convd-claim-deliveries', `
      WITH due AS (
        SELECT id FROM convd_deliveries
        WHERE status = 'pending' AND doc->>'next_attempt_at' <= $2 AND (lease_node IS NULL OR lease_until < now())
        ORDER BY doc->>'next_attempt_at' LIMIT $4 FOR UPDATE SKIP LOCKED
      ), own AS (
        SELECT id FROM convd_deliveries WHERE $5::boolean AND status = 'pending' AND lease_node = $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE convd_deliveries d SET lease_node = $1,
        lease_until = CASE WHEN d.lease_node = $1 THEN greatest(d.lease_until, to_timestamp($3::double precision / 1000))
          ELSE to_timestamp($3::double precision / 1000) END
      WHERE d.id IN (SELECT id FROM due UNION SELECT id FROM own)
      RETURNING d.doc`, [node, claim.dueBy, claim.untilMs, claim.limit, claim.own === true]);
  }

  /** The request taken from `key`'s bucket is given back (a sign-in that did not fail), up to `limit`. */
  async returnRateToken(key: string, limit: number): Promise<void> {
    await this.db.query({ name: 'convd-rate-return', text: 'UPDATE convd_rate_buckets SET tokens = least($2::double precision, tokens + 1) WHERE key = $1', values: [key, limit] });
  }

  /**
   * Forgets the buckets nobody took from for a minute: every limit refills whole within a minute,
   * so such a bucket is full and its row says nothing (the addresses of failed sign-ins would
   * otherwise pile up).
   */
  async pruneRateBuckets(): Promise<number> {
    return (await this.db.query({
      name: 'convd-rate-prune',
      text: 'DELETE FROM convd_rate_buckets WHERE updated_ms < extract(epoch FROM clock_timestamp()) * 1000 - 60000',
      values: [],
    })).rowCount ?? 0;
  }

  /**
   * Takes up to `want` tokens at once from `key`'s token bucket of `limit` per minute, shared by
   * every node (a node spends a batch on its own before it asks again): refilled by the
   * database's clock and taken in one statement under the row's lock (an unlogged table: a crash
   * of the server forgets the buckets, which only lets a minute's burst through again). Whole
   * tokens only; `taken` 0 is a refusal, and `tokens` is what the bucket holds after it.
   */
  async takeRateTokens(key: string, limit: number, want: number): Promise<{ tokens: number; taken: number }> {
    const refilled = 'least($2::double precision, b.tokens + (EXCLUDED.updated_ms - b.updated_ms) * $2 / 60000.0)';
    const [row] = await this.rows<{ tokens: number; taken: number }>('convd-rate-batch', `
      WITH clock AS (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms)
      INSERT INTO convd_rate_buckets AS b (key, tokens, updated_ms, last_allowed, last_taken)
        SELECT $1, $2::double precision - least($3::double precision, floor($2::double precision)), clock.ms,
          $2::double precision >= 1, least($3::double precision, floor($2::double precision)) FROM clock
      ON CONFLICT (key) DO UPDATE SET
        tokens = ${refilled} - least($3::double precision, floor(${refilled})),
        last_taken = least($3::double precision, floor(${refilled})),
        last_allowed = ${refilled} >= 1,
        updated_ms = EXCLUDED.updated_ms
      RETURNING b.tokens AS tokens, b.last_taken AS taken`, [key, limit, want]);
    return { tokens: Number(row?.tokens ?? 0), taken: Number(row?.taken ?? 0) };
  }

  /** One request against `key`'s bucket (see takeRateTokens): whether it may pass. */
  async takeRateToken(key: string, limit: number): Promise<{ tokens: number; allowed: boolean }> {
    const { tokens, taken } = await this.takeRateTokens(key, limit, 1);
    return { tokens, allowed: taken >= 1 };
  }

  /** Conversions waiting for a worker (the queue depth of /metrics). */
  async countQueued(): Promise<number> {
    return this.count('convd-count-queued', "SELECT count(*) AS n FROM convd_conversions WHERE status = 'queued'", []);
  }

  /** Sends `payload` to every listener of `channel` (all nodes), once the current transaction commits. */
  async notify(channel: string, payload: string): Promise<void> {
    // pg_notify gives its transaction an id, so its commit would wait for a WAL flush: the
    // message needs none (it is not logged), and is sent at the commit all the same.
    await this.writer(DEFERRED).query({ name: 'convd-notify', text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });
  }

  /**
   * Listens on `channel` with a connection of its own (LISTEN holds a session); `onLost` is told
   * when that connection drops. Resolves to a function that stops listening.
   */
  async listen(channel: string, onMessage: (payload: string) => void, onLost: (error: Error) => void): Promise<() => Promise<void>> {
    if (!this.pool) throw new Error('listen needs the store itself, not a transaction');
    // An identifier, not a value (LISTEN takes no parameter): the channels are convd's own
    // constants, and nothing but lower-case letters and underscores is accepted.
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    const client = await this.pool.connect();
    client.on('error', onLost);
    client.on('notification', (message) => {
      if (message.channel === channel) onMessage(message.payload ?? '');
    });
    await client.query(`LISTEN ${channel}`);
    return async () => {
      await client.query(`UNLISTEN ${channel}`).catch(() => undefined);
      client.off('error', onLost);
      client.release();
    };
  }

  /** The database answers (for /readyz, which bounds the wait). */
  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async flush(): Promise<void> {
    // Every write was committed before its call resolved.
  }

  async close(): Promise<void> {
    // Let go of the node lock in so many words before the session ends: the server releases a
    // closed session's locks only once its backend has exited, a moment later, and a daemon
    // started right after this one stopped (a restart, a start after `convd store import`) would
    // be refused by the lock that was still there.
    await this.nodeLock?.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    this.nodeLock?.release(true);
    await this.pool?.end();
    await this.relaxed?.end();
  }
}

/**
 * Takes the node lock on `client`'s session, exclusive for a sole node and shared for a node of
 * a cluster, or throws DatabaseInUseError naming what holds it. Which of the two holds it is
 * learnt by trying the other mode (a shared lock is granted only while no one holds it
 * exclusively), taken back at once.
 */
async function takeNodeLock(client: pg.PoolClient, mode: NodeLockMode): Promise<void> {
  const locked = async (text: string) => (await client.query<{ locked: boolean }>(text, [NODE_LOCK])).rows[0]?.locked === true;
  if (await locked(mode === 'sole' ? TRY_NODE_LOCK : TRY_NODE_LOCK_SHARED)) return;
  if (mode === 'cluster') throw new DatabaseInUseError(mode, 'sole');
  const shared = await locked(TRY_NODE_LOCK_SHARED);
  if (shared) await client.query(UNLOCK_NODE_LOCK_SHARED, [NODE_LOCK]);
  throw new DatabaseInUseError(mode, shared ? 'cluster' : 'sole');
}

/**
 * A record as jsonb text. PostgreSQL's jsonb cannot hold the NUL character, which a string of a
 * request (an option) or of an engine (an error message) may contain: it becomes U+FFFD, as an
 * undecodable byte would.
 */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => (typeof field === 'string' && field.includes('\u0000') ? field.replaceAll('\u0000', '\uFFFD') : field));
}
