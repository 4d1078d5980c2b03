import type { ConversionRecord } from '../model/conversion.ts';
import type { ConversionStatus } from '../model/status.ts';
import type { DeliveryRecord, Store } from './types.ts';

export interface StoreObserver {
  /** A conversion was created (`from` null) or changed status; `record` is as it is now. */
  onTransition?(record: ConversionRecord, from: ConversionStatus | null): void;
  /** A webhook delivery attempt was recorded; `record` holds it as its last attempt. */
  onDeliveryAttempt?(record: DeliveryRecord): void;
}

/**
 * The store as it is, plus a call after every conversion state change and every recorded
 * webhook attempt. Every transition of every code path (submission, runner, cancel, expiry,
 * recovery at start) goes through `insertConversion`/`updateConversion`, so logs and metrics
 * hooked here see each one exactly once, without the service knowing about either.
 */
export function observeStore(store: Store, observer: StoreObserver): Store {
  const overrides: Partial<Store> = {
    exclusive(key, work, options) {
      return store.exclusive(key, (inner) => work(inner === store ? observed : observeStore(inner, observer)), options);
    },
    async insertConversion(record, options) {
      await store.insertConversion(record, options);
      observer.onTransition?.({ ...record }, null);
    },
    async updateConversion(id, patch, options) {
      // Progress updates (most calls) carry no status: nothing to compare, no extra read. Their
      // options go through: a progress write is deferred (no wait for the disk) and applies only
      // while the conversion is active.
      if (patch.status === undefined) return store.updateConversion(id, patch, options);
      const before = (await store.getConversion(id))?.status;
      const after = await store.updateConversion(id, patch, options);
      if (after && before !== after.status) observer.onTransition?.(after, before ?? null);
      return after;
    },
    async putDelivery(record) {
      const before = await store.getDelivery(record.id);
      await store.putDelivery(record);
      if (record.attempts.length > (before?.attempts.length ?? 0)) observer.onDeliveryAttempt?.(record);
    },
  };
  const bound = new Map<PropertyKey, unknown>();
  const observed: Store = new Proxy(store, {
    get(target, property) {
      if (property in overrides) return overrides[property as keyof Store];
      let value = bound.get(property);
      if (value === undefined) {
        const original: unknown = Reflect.get(target, property, target);
        // Methods are bound once to the real store: the LowdbStore's private fields need `this`.
        value = typeof original === 'function' ? (original as (...args: unknown[]) => unknown).bind(target) : original;
        if (typeof original === 'function') bound.set(property, value);
      }
      return value;
    },
  });
  return observed;
}
