import type { DeliveryRecord, Store } from '../store/types.ts';

/**
 * Webhook deliveries as their readers see them: the operator every one, an account its own (the
 * sending and its retries are the WebhookDeliverer's).
 */
export class DeliveryLog {
  constructor(private readonly store: Store) {}

  /** Every delivery, or those of one conversion, newest first. */
  async list(conversionId?: string): Promise<DeliveryRecord[]> {
    const list = await this.store.listDeliveries({ conversionId });
    return list.sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
  }

  /** The account's `limit` newest deliveries. */
  recentOf(accountId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.store.recentDeliveries(accountId, limit);
  }

  /** The account's delivery with this id: another account's is as absent as one that never was. */
  async ownedBy(accountId: string, id: string): Promise<DeliveryRecord | undefined> {
    const delivery = await this.store.getDelivery(id);
    return delivery && delivery.account_id === accountId ? delivery : undefined;
  }
}
