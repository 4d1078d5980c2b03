import { statfs } from 'node:fs/promises';
import { BYTES_PER_MB } from '../../src/model/plan.ts';

/**
 * Free space on the data dir's file system, for the submission floor and /readyz. One statfs
 * at most every `maxAgeMs`: a submission reads the cached figure (refreshed in the background
 * when stale), never a syscall of its own.
 */
export class DiskSpace {
  private freeBytes: number | null = null;
  private checkedAt = 0;
  private refreshing: Promise<void> | null = null;
  private wasLow = false;

  constructor(
    private readonly path: string,
    /** Free MiB below which `low()` is true; 0 turns the floor off. Changed by SIGHUP. */
    public floorMb: number,
    /** Told when the space crosses the floor, either way (one log line, not one per request). */
    private readonly onCross: (low: boolean, freeMb: number) => void = () => undefined,
    private readonly maxAgeMs = 1000,
  ) {}

  /** Reads the figure now (start-up, /readyz). */
  refresh(): Promise<void> {
    this.refreshing ??= statfs(this.path)
      .then((stats) => {
        // bavail: what an unprivileged process may still use (the daemon runs as one).
        this.freeBytes = stats.bavail * stats.bsize;
        this.checkedAt = Date.now();
        const low = this.isBelowFloor();
        if (low !== this.wasLow) this.onCross(low, Math.floor(this.freeBytes / BYTES_PER_MB));
        this.wasLow = low;
      })
      .catch(() => {
        // The figure stays as it was; /readyz reports the store check's own failure.
        this.checkedAt = Date.now();
      })
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /** Free bytes as last read (null before the first read succeeded). */
  get free(): number | null {
    return this.freeBytes;
  }

  private isBelowFloor(): boolean {
    return this.floorMb > 0 && this.freeBytes !== null && this.freeBytes < this.floorMb * BYTES_PER_MB;
  }

  /** True when free space is under the floor; cached, refreshed in the background once stale. */
  low(): boolean {
    if (Date.now() - this.checkedAt > this.maxAgeMs) void this.refresh();
    return this.isBelowFloor();
  }
}
