import { ACTIVE, queryCount, queryRows, type Queryable } from './sql.ts';

/**
 * The queue's statements (PostgresJobSource's): the conversions table is the queue, a claim is a
 * lease (`lease_node`, `lease_until`) that the claiming node renews while the conversion runs.
 *
 * Claims and releases go to the relaxed connections (commits that do not wait for the WAL's
 * flush): whatever a crash of the server loses of them is redone, a claim lost leaves the row
 * queued (claimed again), a release lost leaves a lease that runs out.
 */
export class QueueSql {
  constructor(
    private readonly db: Queryable,
    /** Where claims and releases go: the relaxed pool, or `db` itself inside a transaction. */
    private readonly relaxed: Queryable,
  ) {}

  /**
   * Claims a queued conversion no live lease holds, skipping rows another node is claiming this
   * instant (`FOR UPDATE SKIP LOCKED`) and the accounts given (at their share of this node's
   * workers). Fair between accounts: each account's oldest queued conversion is a candidate, and
   * the one whose account runs the fewest conversions in the whole cluster goes first (then the
   * oldest), so an account with nothing running is never behind another's backlog. `idleOnly`
   * (the quick lane) takes only an account that runs nothing; `idle` says whether the claimed
   * one's account ran nothing (whatever the lane). The claim is a lease of `leaseMs` that
   * `renewLeases` extends.
   */
  async claimQueued(node: string, leaseMs: number, skipAccounts: readonly string[], idleOnly = false): Promise<{ id: string; account: string; idle: boolean } | undefined> {
    const [row] = (await this.relaxed.query<{ id: string; account: string; idle: boolean }>({ name: 'convd-claim', text: `WITH heads AS (
        SELECT DISTINCT ON (account_id) id, account_id FROM convd_conversions
        WHERE status = 'queued' AND (lease_until IS NULL OR lease_until < now()) AND NOT (account_id = ANY($3::text[]))
        ORDER BY account_id, id
      ), ranked AS (
        SELECT heads.id, (SELECT count(*) FROM convd_conversions running
          WHERE running.account_id = heads.account_id
            AND (running.status IN ('fetching', 'processing') OR (running.status = 'queued' AND running.lease_until >= now()))) AS load
        FROM heads
      )
      UPDATE convd_conversions claimed SET lease_node = $1, lease_until = now() + $2 * interval '1 millisecond'
      FROM (
        SELECT c.id, ranked.load FROM convd_conversions c JOIN ranked ON ranked.id = c.id
        WHERE c.status = 'queued' AND (c.lease_until IS NULL OR c.lease_until < now()) AND (NOT $4::boolean OR ranked.load = 0)
        ORDER BY ranked.load, c.id LIMIT 1 FOR UPDATE OF c SKIP LOCKED) chosen
      WHERE claimed.id = chosen.id
      RETURNING claimed.id, claimed.account_id AS account, chosen.load = 0 AS idle`, values: [node, leaseMs, [...skipAccounts], idleOnly] })).rows;
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
    await this.relaxed.query({ name: 'convd-release', text: 'UPDATE convd_conversions SET lease_node = NULL, lease_until = NULL WHERE id = $1 AND lease_node = $2', values: [id, node] });
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
    return (await queryRows<{ id: string }>(this.db, 'convd-expired-leases', 'SELECT id FROM convd_conversions WHERE status = ANY($1::text[]) AND lease_until < now() ORDER BY id LIMIT 100', [ACTIVE])).map((row) => row.id);
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

  /** Conversions waiting for a worker (the queue depth of /metrics). */
  async countQueued(): Promise<number> {
    return queryCount(this.db, 'convd-count-queued', "SELECT count(*) AS n FROM convd_conversions WHERE status = 'queued'", []);
  }
}
