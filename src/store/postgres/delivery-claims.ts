import type { DeliveryRecord } from '../types.ts';
import { queryDocs, type Queryable } from './sql.ts';

/**
 * The webhook deliverer's claims on a cluster (Store.claimDelivery, Store.claimPendingDeliveries):
 * a pending delivery is one node's to send while its lease (`lease_node`, `lease_until`) holds.
 */
export class DeliveryClaims {
  constructor(private readonly db: Queryable) {}

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
    return queryDocs(this.db, 'convd-claim-deliveries', `
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
}
