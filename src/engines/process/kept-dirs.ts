import { rm } from 'node:fs/promises';

/**
 * A kept directory unused this long is removed rather than handed out: a system's temp cleaner
 * (systemd-tmpfiles ages /tmp, PrivateTmp's too) may have emptied it meanwhile.
 */
const IDLE_MS = 60 * 60_000;

/**
 * Directories of one run each, kept for a later run once a run has left one as it found it. A
 * directory is an inode allocated and freed: on an ext4 without a journal (as on the development
 * box) that scan past recently freed inodes was 6 % of the daemon's CPU for a small image, one
 * mkdir per run. Whoever gives a directory back says whether it is clean, having removed what
 * its run put there by name: only then is it kept (a run of another account gets nothing of
 * this one's); otherwise, or when more than `keep` wait, it is removed recursively. A run stopped
 * by a time limit or a cancel gives its directory back unclean: its engine may still be writing.
 */
export class KeptDirs {
  /** Given back clean, the last given on top; `at`: when. */
  private readonly free: { dir: string; at: number }[] = [];
  private closed = false;

  constructor(
    /** A new, empty directory (mode 0700). */
    private readonly make: () => Promise<string>,
    /** Kept at most: as many as runs at once, give or take. */
    private readonly keep = 32,
    private readonly now: () => number = Date.now,
  ) {}

  /** An empty directory for one run: a kept one, or a new one. */
  async take(): Promise<string> {
    const newest = this.free.pop();
    if (newest && this.now() - newest.at <= IDLE_MS) return newest.dir;
    // The newest is stale, and those below it are older: all go.
    const stale = newest ? [newest, ...this.free.splice(0)] : [];
    for (const { dir } of stale) void rm(dir, { recursive: true, force: true }).catch(() => undefined);
    return this.make();
  }

  /**
   * The run is done with `dir`. `clear` removes what the run made there by name and tells
   * whether nothing else is left; without it (a run that failed), or when it says no or fails,
   * the directory is removed whole.
   */
  async give(dir: string, clear?: () => Promise<boolean>): Promise<void> {
    if (clear && !this.closed && this.free.length < this.keep) {
      try {
        // Asked again after the clear: the keeper may have closed, or filled, meanwhile.
        if ((await clear()) && !this.closed && this.free.length < this.keep) {
          this.free.push({ dir, at: this.now() });
          return;
        }
      } catch {
        // Not as the run left it: whatever is there goes below.
      }
    }
    await rm(dir, { recursive: true, force: true });
  }

  /** Removes the kept directories; any given back later is removed too. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.free.splice(0).map(({ dir }) => rm(dir, { recursive: true, force: true })));
  }
}
