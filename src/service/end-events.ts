import type { ConversionRecord } from '../model/conversion.ts';

type Listener = (record: ConversionRecord) => void;

/**
 * Tells waiters the moment a conversion reaches an end state: `wait` answers on the event, not
 * by polling, and webhooks and metrics subscribe to the same signal.
 */
export class EndEvents {
  private readonly waiters = new Map<string, Set<Listener>>();
  private readonly subscribers: Listener[] = [];

  subscribe(listener: Listener): void {
    this.subscribers.push(listener);
  }

  emit(record: ConversionRecord): void {
    const listeners = this.waiters.get(record.id);
    this.waiters.delete(record.id);
    for (const listener of listeners ?? []) listener(record);
    for (const subscriber of this.subscribers) {
      try {
        subscriber(record);
      } catch {
        // A subscriber's failure must not stop the others or the state change that emitted.
      }
    }
  }

  /** Resolves with the ended record, or undefined when `timeoutMs` passes or `signal` aborts first. */
  waitFor(id: string, timeoutMs: number, signal?: AbortSignal): Promise<ConversionRecord | undefined> {
    return new Promise((resolve) => {
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      const finish = (record: ConversionRecord | undefined) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        set!.delete(listener);
        if (set!.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
        resolve(record);
      };
      const listener: Listener = (record) => finish(record);
      const onAbort = () => finish(undefined);
      const timer = setTimeout(() => finish(undefined), timeoutMs);
      set.add(listener);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
