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

  /** Another node ended it: wakes this node's waiters only (the ending node told its subscribers). */
  wake(record: ConversionRecord): void {
    const listeners = this.waiters.get(record.id);
    this.waiters.delete(record.id);
    for (const listener of listeners ?? []) listener(record);
  }

  /** Someone here waits for it (a remote end is fetched only then). */
  awaited(id: string): boolean {
    return this.waiters.has(id);
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

  /**
   * `ended` resolves with the ended record, or undefined when `timeoutMs` passes, `signal` aborts
   * or `cancel` is called first. A waiter that is not needed any more must be cancelled: its timer
   * would otherwise hold the process (and its listener the memory) for the whole `timeoutMs`.
   */
  waitFor(id: string, timeoutMs: number, signal?: AbortSignal): { ended: Promise<ConversionRecord | undefined>; cancel: () => void } {
    let cancel = () => undefined as void;
    const ended = new Promise<ConversionRecord | undefined>((resolve) => {
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
      cancel = onAbort;
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    return { ended, cancel };
  }
}
