import type { Store } from '../../store/types.ts';

/** Progress is kept in memory on every change but written at most this often per conversion. */
const PROGRESS_INTERVAL_MS = 250;

export interface ProgressWriter {
  /** The engine's `onProgress`. */
  report(percent: number): void;
  /** The engine is done: a value still held back is not written (the conversion's end writes its own). */
  stop(): void;
}

/**
 * An engine's `onProgress` for conversion `id`: whole percents below 100, written at most every
 * PROGRESS_INTERVAL_MS. A value held back by that interval is written when it has passed (unless
 * a later one was written meanwhile): an engine that reports 40 and then works for seconds (a page
 * waiting, a long export) is shown at 40, not at whatever came 250 ms before. It never goes back.
 */
export function progressWriter(store: Store, id: string, intervalMs = PROGRESS_INTERVAL_MS): ProgressWriter {
  let lastWrite = 0;
  let written = -1;
  let latest = -1;
  let writing = false;
  let later: NodeJS.Timeout | undefined;
  const write = () => {
    later = undefined;
    if (latest === written) return;
    // One write in flight at a time: a slow store is given fewer, not a queue of them.
    if (writing) {
      later = setTimeout(write, intervalMs).unref();
      return;
    }
    const value = latest;
    written = value;
    lastWrite = Date.now();
    writing = true;
    // Not awaited: it may land after the conversion ended, and then changes nothing.
    void store.updateConversion(id, { progress: value }, { deferred: true, whileActive: true }).catch(() => undefined).finally(() => {
      writing = false;
    });
  };
  return {
    report(percent: number) {
      // Never back: an engine's second try (a page redrawn in a new browser) counts again from 0.
      latest = Math.max(latest, 0, Math.min(99, Math.floor(percent)));
      if (latest === written || later) return;
      const wait = lastWrite + intervalMs - Date.now();
      if (wait <= 0 && !writing) write();
      else later = setTimeout(write, Math.max(wait, 1)).unref();
    },
    stop() {
      clearTimeout(later);
      later = undefined;
    },
  };
}
