import type { AccountRecord, ApiKeyRecord, Settings } from '../../model/account.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import { END_STATUSES, type ConversionStatus } from '../../model/status.ts';
import { conversionIdFloor, conversionIdTime } from '../../model/ids.ts';
import { DEFAULT_SETTINGS, IDEMPOTENCY_TTL_MS, type DayUsage, type DeliveryRecord, type FlushOptions, type ListQuery, type Store, type StorePeek, type UpdateOptions, type WebTokenRecord } from '../types.ts';
import { connect, disconnect, type Connections, type PostgresStoreOptions } from './connect.ts';
import { DeliveryClaims } from './delivery-claims.ts';
import { Notifications } from './notifications.ts';
import { QueueSql } from './queue-sql.ts';
import { RateBuckets } from './rate-buckets.ts';
import { SecondCache } from './second-cache.ts';
import { ACTIVE, queryCount, queryDoc, queryDocs, queryRows, toJson, type Doc, type Queryable } from './sql.ts';
import { inLockedTransaction, lockInTransaction } from './transaction.ts';

export type { PostgresStoreOptions } from './connect.ts';
export { DatabaseInUseError, type NodeLockMode } from './node-lock.ts';

/** An ended conversion changed on some node (payload: its id, or `*` for many): the others drop what they keep of it. */
const CONVERSION_CHANGED = 'convd_changed';

/** Names of what the second cache `hot` keeps: read through it, peeked and forgotten by the same name. */
const SETTINGS_ENTRY = 'settings';
const keyEntry = (hash: string): string => `key:${hash}`;
const accountEntry = (id: string): string => `account:${id}`;

/**
 * The Store on PostgreSQL: every node that shares the database sees the
 * same accounts, keys, settings, conversions, deliveries and web sessions, and `exclusive` is a
 * transaction that holds an advisory lock, so an account's submission checks and insert are one
 * step across nodes. Every statement is parameterized and named (prepared once per connection);
 * no SQL is built from values. A write is committed when its call resolves (`flush` has nothing
 * left to do).
 *
 * The records' statements are here; what only the database does is composed in from files of
 * their own: the queue's claims and leases (`queue`), LISTEN/NOTIFY between nodes
 * (`notifications`), the shared rate buckets (`rateBuckets`), webhook delivery claims, and the
 * node lock (held by the connections, connect.ts).
 */
export class PostgresStore implements Store {
  /** The queue's statements, for PostgresJobSource. */
  readonly queue: QueueSql;
  /** What the nodes tell each other (new work, an end, a cancel). */
  readonly notifications: Notifications;
  /** What the second caches keep, read at once (none in a transaction: it reads fresh). */
  readonly peek: StorePeek | undefined;
  /** Requests per minute and failed sign-ins, counted across the nodes. */
  readonly rateBuckets: RateBuckets;
  private readonly deliveryClaims: DeliveryClaims;

  private constructor(
    private readonly db: Queryable,
    /** The pools (and node lock) this store owns and ends on close; null for a store bound to a transaction. */
    private readonly connections: Connections | null,
    /** Inside a transaction: what runs once it commits (dropped if it rolls back). */
    private readonly committed: (() => void)[] | null = null,
    /** Shared by the store and its transactions; reads inside a transaction never use it. */
    private readonly hot: SecondCache = new SecondCache(),
    /** Ended conversions read recently (see getConversion); shared with the transactions, which never read from it. */
    private readonly ended: SecondCache = new SecondCache(1000, 10_000, shallowCopy),
  ) {
    this.peek = connections === null ? undefined : {
      settings: () => hot.peek<Settings>(SETTINGS_ENTRY),
      apiKeyByHash: (hash) => hot.peek<ApiKeyRecord>(keyEntry(hash)),
      account: (id) => hot.peek<AccountRecord>(accountEntry(id)),
      conversion: (id) => ended.peek<ConversionRecord>(id),
    };
    // Single statements nobody is told about go to the relaxed pool (Connections.relaxed); in a
    // transaction, to its connection (a deferred `exclusive` sets the same in its transaction).
    const relaxed = connections?.relaxed ?? db;
    this.queue = new QueueSql(db, relaxed);
    this.notifications = new Notifications(connections?.pool ?? null, relaxed);
    this.rateBuckets = new RateBuckets(db);
    this.deliveryClaims = new DeliveryClaims(db);
  }

  /** Connects, applies the schema's missing steps, and checks that the database answers. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const connections = await connect(options);
    return new PostgresStore(connections.pool, connections);
  }

  /** Where a write that may be deferred goes: the relaxed pool outside a transaction. */
  private writer(options: UpdateOptions | undefined): Queryable {
    return options?.deferred === true && this.connections !== null ? this.connections.relaxed : this.db;
  }

  /** A read every request makes: from the second cache outside transactions, fresh inside. */
  private cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    return this.connections === null ? load() : this.hot.get(key, load);
  }

  /**
   * Drops a cached read that a write here replaces: at once, and again once the write is
   * committed (inside a transaction, a read between the two still finds the old row and may keep it).
   */
  private forget(key: string, cache: SecondCache = this.hot): void {
    cache.drop(key);
    if (this.committed) this.afterCommit(() => cache.drop(key));
  }

  afterCommit(callback: () => void): void {
    if (this.committed) this.committed.push(callback);
    else callback();
  }

  async exclusive<T>(key: string, work: (store: Store) => Promise<T>, options?: UpdateOptions): Promise<T> {
    if (this.connections === null) {
      // Already in a transaction: the same connection takes the lock too (it is re-entrant).
      await lockInTransaction(this.db, key);
      return work(this);
    }
    return inLockedTransaction(this.connections.pool, key, options?.deferred === true,
      (client, committed) => work(new PostgresStore(client, null, committed, this.hot, this.ended)));
  }

  /**
   * Drops what this process keeps of ended conversions when another node changes one (a delete,
   * an expiry); `onLost` is told when the listening connection drops, after which the kept
   * records still last no more than a second. Resolves to a function that stops listening.
   */
  async followChanges(onLost: (error: Error) => void): Promise<() => Promise<void>> {
    return this.notifications.listen(CONVERSION_CHANGED, (id) => (id === '*' ? this.ended.clear() : this.ended.drop(id)), (error) => {
      this.ended.clear();
      onLost(error);
    });
  }

  /**
   * Outside a transaction an ended conversion is kept for a second: a client that reads a finished
   * conversion again and again (a dashboard, a script polling a list it already has) then costs no
   * round trip to the database. A queued or running one changes with every step of a worker on any
   * node and is read every time. An ended one changes only by a delete or an expiry (succeeded ->
   * expired), a cancel's engine time and a prune: this process's own writes drop it at once (and
   * again at their commit), another node's arrive on CONVERSION_CHANGED (followChanges), and one
   * whose notification was lost is at most a second old, the same bound as a revoked key. A
   * succeeded one is never kept past its result's expiry, so the service's expiry on read sees it due.
   */
  async getConversion(id: string): Promise<ConversionRecord | undefined> {
    const load = () => queryDoc<ConversionRecord>(this.db, 'convd-conversion', 'SELECT doc FROM convd_conversions WHERE id = $1', [id]);
    return this.connections === null ? load() : this.ended.get(id, load, keptUntil);
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
    // An update only while active changes no ended record.
    if (!options?.whileActive) this.forget(id, this.ended);
    // A change to a conversion that had already ended (an end itself changes one nobody keeps):
    // other nodes may keep it. Inside a transaction the message leaves at the commit.
    if (row && END_STATUSES.has(row.doc.status) && (rest.status === undefined || rest.status === 'expired')) {
      await this.notifications.notify(CONVERSION_CHANGED, id).catch(() => undefined);
    }
    // Ended meanwhile (whileActive): left as it is.
    return row ? row.doc : options?.whileActive ? this.getConversion(id) : undefined;
  }

  async listConversions(query: ListQuery): Promise<ConversionRecord[]> {
    return queryDocs(this.db, 'convd-conversion-list', `SELECT doc FROM convd_conversions
      WHERE account_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR id < $3)
      ORDER BY id DESC LIMIT $4`, [query.accountId, query.status ?? null, query.before ?? null, query.limit]);
  }

  async findByIdempotencyKey(accountId: string, key: string): Promise<ConversionRecord | undefined> {
    const liveSince = new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString();
    return queryDoc(this.db, 'convd-conversion-idem', 'SELECT doc FROM convd_conversions WHERE account_id = $1 AND idem_key = $2 AND created_at > $3', [
      accountId, key, liveSince,
    ]);
  }

  async conversionsWithStatus(statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    return queryDocs(this.db, 'convd-conversion-status', 'SELECT doc FROM convd_conversions WHERE status = ANY($1::text[]) ORDER BY id', [[...statuses]]);
  }

  async resultBytes(): Promise<number> {
    // The sum in the database: at millions of results, their records never come over the wire.
    const [row] = await queryRows<{ bytes: string }>(this.db, 'convd-result-bytes', "SELECT coalesce(sum((doc->'result'->>'size')::bigint), 0)::text AS bytes FROM convd_conversions WHERE status = 'succeeded'", []);
    return Number(row?.bytes ?? 0);
  }

  async conversionsEndedSince(isoTime: string, statuses: readonly ConversionStatus[]): Promise<ConversionRecord[]> {
    // Through the index on finished_at (schema step 6): the recent end of the history only.
    return queryDocs(this.db, 'convd-conversion-ended-since', `SELECT doc FROM convd_conversions
      WHERE finished_at >= $1 AND status = ANY($2::text[]) ORDER BY finished_at, id`, [isoTime, [...statuses]]);
  }

  async conversionsExpiringBy(isoTime: string): Promise<ConversionRecord[]> {
    return queryDocs(this.db, 'convd-conversion-expiring', "SELECT doc FROM convd_conversions WHERE status = 'succeeded' AND expires_at <= $1 ORDER BY expires_at", [isoTime]);
  }

  async countActive(accountId: string): Promise<number> {
    return queryCount(this.db, 'convd-count-active', 'SELECT count(*) AS n FROM convd_conversions WHERE account_id = $1 AND status = ANY($2::text[])', [accountId, ACTIVE]);
  }

  async creditSums(accountId: string, sinceIso: string): Promise<{ charged: number; reserved: number }> {
    // One statement, one snapshot (READ COMMITTED takes one per statement).
    const [row] = await queryRows<{ charged: string | null; reserved: string | null }>(this.db, 'convd-credit-sums', `SELECT
      (SELECT sum(credits) FROM convd_conversions WHERE account_id = $1 AND charged_at >= $2) AS charged,
      (SELECT sum(reserved_credits) FROM convd_conversions WHERE account_id = $1 AND status = ANY($3::text[])) AS reserved`, [accountId, sinceIso, ACTIVE]);
    return { charged: Number(row?.charged ?? 0), reserved: Number(row?.reserved ?? 0) };
  }

  async usageByDay(accountId: string, sinceIso: string): Promise<DayUsage[]> {
    // One pass over the window's rows (through the index on the account's ids: ids sort by
    // creation), grouped twice: by the day made, and by the day charged. Times are ISO text in
    // UTC, so a day is the text's first ten characters.
    const rows = await queryRows<{ by_charge: number; day: string | null; made: string; credits: string | null }>(this.db, 'convd-usage-by-day', `
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
    const rows = await queryRows<{ id: string; charged: string }>(this.db, 'convd-charged-since', `
      SELECT p.id, coalesce((SELECT sum(c.credits) FROM convd_conversions c WHERE c.account_id = p.id AND c.charged_at >= p.since), 0)::text AS charged
      FROM unnest($1::text[], $2::text[]) AS p(id, since)`, [periods.map((p) => p.accountId), periods.map((p) => p.sinceIso)]);
    return new Map(rows.map((row) => [row.id, Number(row.charged)]));
  }

  async countCreatedSince(accountId: string, sinceMs: number): Promise<number> {
    return queryCount(this.db, 'convd-count-since', 'SELECT count(*) AS n FROM convd_conversions WHERE account_id = $1 AND id >= $2', [accountId, conversionIdFloor(sinceMs)]);
  }

  async engineTimeSince(accountId: string, sinceMs: number): Promise<number> {
    return queryCount(this.db, 'convd-engine-time', "SELECT sum((doc->>'engine_ms')::bigint) AS n FROM convd_conversions WHERE account_id = $1 AND id >= $2", [accountId, conversionIdFloor(sinceMs)]);
  }

  async createdAtOfNewest(accountId: string, n: number): Promise<number | undefined> {
    const [row] = await queryRows<{ id: string }>(this.db, 'convd-nth-newest', 'SELECT id FROM convd_conversions WHERE account_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1', [accountId, n - 1]);
    return row ? conversionIdTime(row.id) : undefined;
  }

  async pruneFinishedBefore(isoTime: string): Promise<number> {
    // Charges of the account's current period stay: they are its balance.
    const pruned = await this.exclusive('prune', async (store) => {
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
    if (pruned > 0) {
      this.ended.clear();
      await this.notifications.notify(CONVERSION_CHANGED, '*').catch(() => undefined);
    }
    return pruned;
  }

  async getAccount(id: string): Promise<AccountRecord | undefined> {
    return this.cached(accountEntry(id), () => queryDoc(this.db, 'convd-account', 'SELECT doc FROM convd_accounts WHERE id = $1', [id]));
  }

  async accountsNamed(name: string, limit: number): Promise<AccountRecord[]> {
    // Through the index on the name (schema step 8), not a read of every account.
    return queryDocs(this.db, 'convd-accounts-named', "SELECT doc FROM convd_accounts WHERE doc->>'name' = $1 ORDER BY id LIMIT $2", [name, limit]);
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return queryDocs(this.db, 'convd-accounts', 'SELECT doc FROM convd_accounts ORDER BY created_at, id', []);
  }

  async putAccount(record: AccountRecord): Promise<void> {
    this.forget(accountEntry(record.id));
    await this.db.query({
      name: 'convd-account-put',
      text: 'INSERT INTO convd_accounts (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [record.id, toJson(record)],
    });
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    return queryDoc(this.db, 'convd-key', 'SELECT doc FROM convd_api_keys WHERE id = $1', [id]);
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.cached(keyEntry(hash), () => queryDoc(this.db, 'convd-key-hash', 'SELECT doc FROM convd_api_keys WHERE hash = $1', [hash]));
  }

  async listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
    return queryDocs(this.db, 'convd-keys', 'SELECT doc FROM convd_api_keys WHERE account_id = $1 ORDER BY id', [accountId]);
  }

  async putApiKey(record: ApiKeyRecord): Promise<void> {
    this.forget(keyEntry(record.hash));
    await this.db.query({
      name: 'convd-key-put',
      text: 'INSERT INTO convd_api_keys (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc',
      values: [record.id, toJson(record)],
    });
  }

  async getSettings(): Promise<Settings> {
    return this.cached(SETTINGS_ENTRY, async () => (await queryDoc<Settings>(this.db, 'convd-settings', 'SELECT doc FROM convd_settings WHERE id = 1', [])) ?? structuredClone(DEFAULT_SETTINGS));
  }

  async putSettings(settings: Settings): Promise<void> {
    this.forget(SETTINGS_ENTRY);
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
    return queryDoc(this.db, 'convd-web-token', 'SELECT doc FROM convd_web_tokens WHERE hash = $1', [hash]);
  }

  async takeWebToken(hash: string): Promise<WebTokenRecord | undefined> {
    // One statement: of nodes racing for a link, the row's lock lets one delete it and return it;
    // the others find it gone once that commits.
    return queryDoc(this.db, 'convd-web-token-take', 'DELETE FROM convd_web_tokens WHERE hash = $1 RETURNING doc', [hash]);
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
    return queryDoc(this.db, 'convd-delivery', 'SELECT doc FROM convd_deliveries WHERE id = $1', [id]);
  }

  async addDelivery(record: DeliveryRecord): Promise<DeliveryRecord> {
    // The unique index on (conversion_id, event) decides between nodes adding the same delivery.
    // A conflict with a row another transaction commits meanwhile waits for that commit, but this
    // statement's snapshot does not see the row: a second statement reads it. (Gone again by
    // then, it was removed in between, by a prune: add anew.)
    for (let round = 0; round < 3; round++) {
      const added = await queryDoc<DeliveryRecord>(this.db, 'convd-delivery-add', `INSERT INTO convd_deliveries (id, doc) VALUES ($1, $2)
        ON CONFLICT (conversion_id, (doc->>'event')) DO NOTHING RETURNING doc`, [record.id, toJson(record)]);
      if (added) return added;
      const existing = await queryDoc<DeliveryRecord>(this.db, 'convd-delivery-of-event',
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
    return queryDocs(this.db, 'convd-recent-deliveries', `SELECT doc FROM convd_deliveries
      WHERE doc->>'account_id' = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [accountId, limit]);
  }

  async listDeliveries(filter: { conversionId?: string; status?: DeliveryRecord['status'] }): Promise<DeliveryRecord[]> {
    return queryDocs(this.db, 'convd-deliveries', `SELECT doc FROM convd_deliveries
      WHERE ($1::text IS NULL OR conversion_id = $1) AND ($2::text IS NULL OR status = $2) ORDER BY created_at, id`, [
      filter.conversionId ?? null, filter.status ?? null,
    ]);
  }


  async claimDelivery(id: string, node: string, untilMs: number, attempts?: number): Promise<boolean> {
    return this.deliveryClaims.claimDelivery(id, node, untilMs, attempts);
  }

  async claimPendingDeliveries(node: string, claim: { dueBy: string; untilMs: number; limit: number; own?: boolean }): Promise<DeliveryRecord[]> {
    return this.deliveryClaims.claimPendingDeliveries(node, claim);
  }

  async pruneRateBuckets(): Promise<number> {
    return this.rateBuckets.pruneRateBuckets();
  }

  /** The database answers (for /readyz, which bounds the wait). */
  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async flush(_options?: FlushOptions): Promise<void> {
    // Every write was committed before its call resolved.
  }

  async close(): Promise<void> {
    if (this.connections) await disconnect(this.connections);
  }
}

/**
 * A record as the lowdb store hands it out: callers replace a record's fields and never change
 * what is inside one, and the public JSON's cache knows an unchanged record by its fields.
 */
function shallowCopy<T>(value: T): T {
  return value === undefined ? value : { ...value };
}

/** Until when a conversion just read may be kept: an ended one at most until its result expires; any other not at all. */
function keptUntil(record: ConversionRecord | undefined): number {
  if (!record || !END_STATUSES.has(record.status)) return -Infinity;
  return record.status === 'succeeded' && record.result ? Date.parse(record.result.expires_at) : Infinity;
}
