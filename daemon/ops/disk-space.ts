import { statfs } from 'node:fs/promises';
import { BYTES_PER_MB } from '../../src/model/plan.ts';
import type { DiskRoom } from '../../src/store/disk-room.ts';

/** Seconds a submission refused for low disk space is told to wait. */
export const LOW_DISK_RETRY_AFTER = 60;

/** One upload's share of the disk, from `UploadSpace.beginUpload`. */
export interface SpoolMeter {
  /**
   * Counts `bytes` about to be written to a spool file. False, and nothing counted, when writing
   * them would take free space below the floor: the upload must stop.
   */
  take(bytes: number): boolean;
  /**
   * The upload's body is over: what it announced and did not send is released. `removed`: its
   * spool files were deleted; resolves once free space was read again, so that the space it took
   * counts as free for the next submission at once, not a second later.
   */
  end(removed: boolean): Promise<void>;
}

/** Where uploads are metered against the disk floor (DiskSpace; a no-op when there is no disk to watch). */
export interface UploadSpace {
  /**
   * An upload starts, announcing `announcedBytes` (its Content-Length; null when not given).
   * With `check`, null (refused) when free space less those bytes and less what other uploads in
   * flight announced and have not sent yet would be below the floor.
   */
  beginUpload(announcedBytes: number | null, check: boolean): SpoolMeter | null;
}

export const UNMETERED_SPACE: UploadSpace = {
  beginUpload: () => ({ take: () => true, end: () => Promise.resolve() }),
};

/**
 * Free space on the data dir's file system, for the submission floor, the uploads and /readyz.
 * One statfs at most every `maxAgeMs`: a submission and every chunk of an upload read a figure
 * kept in memory (refreshed in the background when stale), never a syscall of their own. Between
 * two reads the figure is kept honest by subtracting what spool files were given since, so a
 * fast upload cannot run past the floor while the last read is up to a second old.
 */
export class DiskSpace implements UploadSpace, DiskRoom {
  private statfsFree: number | null = null;
  private checkedAt = 0;
  private refreshing: Promise<void> | null = null;
  private wasLow = false;
  /** Bytes given to spool files since the statfs in use was started: not in its figure. */
  private spooled = 0;
  /** What uploads in flight announced (Content-Length) and have not written yet. */
  private announced = 0;

  constructor(
    private readonly path: string,
    /** Free MiB below which `low()` is true; 0 turns the floor off. Changed by SIGHUP. */
    public floorMb: number,
    /** Told when the space crosses the floor, either way (one log line, not one per request). */
    private readonly onCross: (low: boolean, freeMb: number) => void = () => undefined,
    private readonly maxAgeMs = 1000,
  ) {}

  /** Reads the figure now (start-up, /readyz); joins a read in progress. */
  refresh(): Promise<void> {
    if (this.refreshing) return this.refreshing;
    const counted = this.spooled;
    this.refreshing = statfs(this.path)
      .then((stats) => {
        // bavail: what an unprivileged process may still use (the daemon runs as one).
        this.statfsFree = stats.bavail * stats.bsize;
        // Spooled before the call: in the figure now. Spooled during it: perhaps in it too, and
        // still subtracted, which errs on the side of the floor.
        this.spooled -= counted;
        this.checkedAt = Date.now();
        const low = this.below(this.free);
        if (low !== this.wasLow) this.onCross(low, Math.floor((this.free ?? 0) / BYTES_PER_MB));
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

  /** A read that starts after this call: one in progress may predate a file just deleted. */
  private refreshAfterNow(): Promise<void> {
    return this.refreshing ? this.refreshing.then(() => this.refresh()) : this.refresh();
  }

  private refreshIfStale(): void {
    if (Date.now() - this.checkedAt > this.maxAgeMs) void this.refresh();
  }

  /** Free bytes as last read less what was spooled since (null before the first read succeeded). */
  get free(): number | null {
    return this.statfsFree === null ? null : this.statfsFree - this.spooled;
  }

  private below(free: number | null): boolean {
    return this.floorMb > 0 && free !== null && free < this.floorMb * BYTES_PER_MB;
  }

  /**
   * What may still be written above the floor: free space less what uploads in flight announced
   * (conversions writing results and fetching URL inputs keep within it). Infinity without a floor.
   */
  headroom(): number {
    this.refreshIfStale();
    const free = this.free;
    if (this.floorMb <= 0 || free === null) return Infinity;
    return free - this.announced - this.floorMb * BYTES_PER_MB;
  }

  /** True when free space is under the floor; cached, refreshed in the background once stale. */
  low(): boolean {
    this.refreshIfStale();
    return this.below(this.free);
  }

  beginUpload(announcedBytes: number | null, check: boolean): SpoolMeter | null {
    this.refreshIfStale();
    const free = this.free;
    let left = announcedBytes ?? 0;
    if (check && free !== null && this.below(free - left - this.announced)) return null;
    this.announced += left;
    let written = 0;
    let ended = false;
    return {
      take: (bytes) => {
        this.refreshIfStale();
        const now = this.free;
        if (now !== null && this.below(now - bytes)) return false;
        this.spooled += bytes;
        written += bytes;
        const sent = Math.min(bytes, left);
        left -= sent;
        this.announced -= sent;
        return true;
      },
      end: async (removed) => {
        if (ended) return;
        ended = true;
        this.announced -= left;
        left = 0;
        if (removed && written > 0) await this.refreshAfterNow();
      },
    };
  }
}
