import type { Store } from '../../store/types.ts';

/** Progress is kept in memory on every change but written at most this often per conversion. */
const PROGRESS_INTERVAL_MS = 250;

/** An engine's `onProgress` for conversion `id`: whole percents below 100, written now and then. */
export function progressWriter(store: Store, id: string): (percent: number) => void {
  let lastWrite = 0;
  let lastValue = -1;
  let writing = false;
  return (percent: number) => {
    const value = Math.max(0, Math.min(99, Math.floor(percent)));
    const now = Date.now();
    // One write in flight at a time: a slow store is given fewer, not a queue of them.
    if (value === lastValue || now - lastWrite < PROGRESS_INTERVAL_MS || writing) return;
    lastValue = value;
    lastWrite = now;
    writing = true;
    // Not awaited: it may land after the conversion ended, and then changes nothing.
    void store.updateConversion(id, { progress: value }, { deferred: true, whileActive: true }).catch(() => undefined).finally(() => {
      writing = false;
    });
  };
}
