import { stat } from 'node:fs/promises';
import { ConversionFailure } from '../../errors/api-error.ts';
import { formatSeconds } from '../units.ts';

export interface ProgressWatchOptions {
  /** Nothing advanced for this long while watched: the run is ended. 0 or undefined: never. */
  stallMs: number | undefined;
  /** What stayed still, for the message ("Ghostscript's output stayed at 253 bytes"); read once, at the stall. */
  describe: () => string;
  /**
   * Whether the clock runs from the start. An engine that can tell progress only in some phases
   * of its work (LibreOffice's PDF export) starts with it off and turns it on there: time in the
   * phases it cannot see into is never taken for a stall.
   */
  watching?: boolean;
}

/**
 * Ends work that makes no progress before its time limit does: the engine calls `advanced()` at
 * each sign of progress it can see (its output grew, a page was done), and when none came for
 * `stallMs` while watched, `signal` aborts with ConversionFailure('timeout') saying what stayed
 * still and for how long. The engine hands `signal` on with the job's own (its process group is
 * then killed as on any abort). CPU time is no sign of progress: a loop uses it too.
 */
export class ProgressWatch {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;
  private last = performance.now();
  private watching: boolean;

  constructor(private readonly options: ProgressWatchOptions) {
    this.watching = options.watching ?? true;
    const stallMs = options.stallMs;
    if (!stallMs || stallMs <= 0 || !Number.isFinite(stallMs)) return;
    // Read the clock a few times per window rather than re-arm a timer on every sign (a page each
    // millisecond in a large export): a stall is seen at most a quarter of a window late.
    this.timer = setInterval(() => this.check(stallMs), Math.max(50, Math.min(1000, stallMs / 4)));
    this.timer.unref();
  }

  /** Aborts at a stall; never otherwise. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stalled(): boolean {
    return this.controller.signal.aborted;
  }

  advanced(): void {
    this.last = performance.now();
  }

  /** Turns the watch on (the clock starts afresh) or off (nothing counts until it is on again). */
  watch(on: boolean): void {
    if (on && !this.watching) this.last = performance.now();
    this.watching = on;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(stallMs: number): void {
    if (!this.watching || this.stalled) return;
    const idle = performance.now() - this.last;
    if (idle < stallMs) return;
    this.stop();
    this.controller.abort(new ConversionFailure(
      'timeout',
      `The conversion made no progress for ${formatSeconds(stallMs)} and was ended before its time limit: ${this.options.describe()}.`,
    ));
  }
}

/**
 * Feeds `watch` with the growth of the file at `path` (absent counts as empty), measured every
 * `everyMs`: for an engine that writes its output as it goes. Returns the size last seen and a stop.
 */
export function watchFileGrowth(path: string, watch: ProgressWatch, everyMs = 250): { size: () => number; stop: () => void } {
  let size = 0;
  let reading = false;
  const poll = setInterval(() => {
    if (reading) return;
    reading = true;
    stat(path).then((info) => info.size, () => 0).then((now) => {
      reading = false;
      if (now > size) watch.advanced();
      size = Math.max(size, now);
    });
  }, everyMs);
  poll.unref();
  return { size: () => size, stop: () => clearInterval(poll) };
}
