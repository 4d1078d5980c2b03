import { constants, PerformanceObserver, type NodeGCPerformanceDetail, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what a full collection left alive, as long as that
 * is small: 300 % (V8's own largest factor, 4x). V8 starts marking the old generation early when
 * the room left under its limit is smaller than the young generation's capacity (16 MiB semi-spaces
 * by default). A daemon keeps 20-30 MiB alive and V8 set its limit at about twice that, so it marked
 * and compacted again and again without anything to free: a full collection about every ten
 * conversions of a PDF page, about 30 ms of CPU each over the main thread and V8's helper threads
 * (`--trace-gc`, `npm run bench -- pdf-pages`: 28-30 of them in a run, 2-3 with this; the daemon's
 * CPU per conversion 11-15 ms against 9-10 on Node 20, 12 against 8 on Node 24).
 */
const SMALL_HEAP_GROWING_PERCENT = 300;
/**
 * Above this much alive after a full collection (a lowdb store with a long history), V8 chooses
 * the factor again: a large heap has room enough under its limit, and 4x of it would be memory
 * the box may need.
 */
const SMALL_HEAP_BYTES = 128 * 1024 * 1024;

export interface HeapGrowthOptions {
  /** Alive after a full collection above which V8 chooses the factor itself (default 128 MiB). */
  smallHeapBytes?: number;
  /** Where the flag goes (default V8's own setFlagsFromString). */
  setFlags?: (flags: string) => void;
}

/**
 * Sets the growth for a small heap now, and after each full collection (when V8 sets its next
 * limit) the factor that fits the heap left alive. Returns a function that stops watching.
 * `--heap-growing-percent` is read by V8 each time it sets the limit, so changing it at run time
 * is safe (Node keeps V8's flags writable).
 */
export function steadyHeapGrowth(options: HeapGrowthOptions = {}): () => void {
  const { smallHeapBytes = SMALL_HEAP_BYTES, setFlags = setFlagsFromString } = options;
  let small = true;
  setFlags(`--heap-growing-percent=${SMALL_HEAP_GROWING_PERCENT}`);
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some(isFullCollection)) return;
    const nowSmall = getHeapStatistics().used_heap_size <= smallHeapBytes;
    if (nowSmall === small) return;
    small = nowSmall;
    // 0 is V8's default: the factor it derives from its own collection and mutator speeds.
    setFlags(`--heap-growing-percent=${small ? SMALL_HEAP_GROWING_PERCENT : 0}`);
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}

/** A gc entry carries its kind in `detail` (Node's types leave it off PerformanceEntry). */
function isFullCollection(entry: PerformanceEntry): boolean {
  const { detail } = entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail };
  return detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}
