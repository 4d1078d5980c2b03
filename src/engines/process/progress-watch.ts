import { stat } from 'node:fs/promises';
import { ConversionFailure } from '../../errors/api-error.ts';
import { formatSeconds } from '../units.ts';
import { processCpuMs } from './proc-readings.ts';

export interface ProgressWatchOptions {
  /** Nothing advanced for this long while watched: the run is ended. 0 or undefined: never. */
  stallMs: number | undefined;
  /**
   * The processor time the work has used so far, ms (the latest reading; undefined while there is
   * none). Given, the window counts that rather than the clock: work starved of the CPU (engines
   * drop to niceness 19, other tenants keep the cores busy) is not ended for being slow, and work
   * that waits on nothing and gets nowhere uses the CPU it is measured by.
   */
  cpuMs?: () => number | undefined;
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
  private lastCpu: number | undefined;
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
    this.lastCpu = this.options.cpuMs?.();
  }

  /** Turns the watch on (the clock starts afresh) or off (nothing counts until it is on again). */
  watch(on: boolean): void {
    if (on && !this.watching) this.advanced();
    this.watching = on;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(stallMs: number): void {
    if (!this.watching || this.stalled) return;
    const cpu = this.options.cpuMs?.();
    // Counted from the first reading where the last sign came before there was one.
    if (cpu !== undefined && this.lastCpu === undefined) this.lastCpu = cpu;
    const byCpu = cpu !== undefined && this.lastCpu !== undefined;
    const idle = byCpu ? cpu - this.lastCpu! : performance.now() - this.last;
    if (idle < stallMs) return;
    this.stop();
    const spent = byCpu ? `used ${formatSeconds(stallMs)} of processor time without progress` : `made no progress for ${formatSeconds(stallMs)}`;
    this.controller.abort(new ConversionFailure('timeout', `The conversion ${spent} and was ended before its time limit: ${this.options.describe()}.`));
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

/** Reads `pid`'s processor time every `everyMs`: the latest reading, and a stop. */
export function watchCpu(pid: number, everyMs = 250): { ms: () => number | undefined; stop: () => void } {
  let latest: number | undefined;
  const poll = setInterval(() => {
    latest = processCpuMs(pid) ?? latest;
  }, everyMs);
  poll.unref();
  return { ms: () => latest, stop: () => clearInterval(poll) };
}
