import { queryRows, type Queryable } from './sql.ts';

/**
 * The token buckets every node shares (`convd_rate_buckets`): requests per minute and failed
 * sign-ins counted across the cluster (SharedRateLimiter, SharedFailureBuckets).
 */
export class RateBuckets {
  constructor(private readonly db: Queryable) {}

  /**
   * Takes up to `want` tokens at once from `key`'s token bucket of `limit` per minute, shared by
   * every node (a node spends a batch on its own before it asks again): refilled by the
   * database's clock and taken in one statement under the row's lock (an unlogged table: a crash
   * of the server forgets the buckets, which only lets a minute's burst through again). Whole
   * tokens only; `taken` 0 is a refusal, and `tokens` is what the bucket holds after it.
   */
  async takeRateTokens(key: string, limit: number, want: number): Promise<{ tokens: number; taken: number }> {
    const refilled = 'least($2::double precision, b.tokens + (EXCLUDED.updated_ms - b.updated_ms) * $2 / 60000.0)';
    const [row] = await queryRows<{ tokens: number; taken: number }>(this.db, 'convd-rate-batch', `
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
}
