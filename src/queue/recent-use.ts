/** How far back an account's runs count towards being heavy. */
export const WINDOW_MS = 5 * 60_000;
/** An account whose runs held workers longer than this within the window is not light. */
const DEFAULT_LIGHT_MS = 60_000;
/** A run that ended within this long was a quick one (the workers' quick lane moves a job on after it). */
export const QUICK_RUN_MS = 2000;
/** Aged-out runs kept at the front of an account's list before it is copied without them. */
const COMPACT_AFTER = 1024;

/**
 * One account's runs of the window, oldest first, with their sums kept as runs come and age out:
 * every worker's take asks, and a busy account has thousands of runs in five minutes (summing
 * them per take was 0.2 ms of the daemon's CPU a conversion after 3,000 small ones).
 */
interface AccountRuns {
  runs: { at: number; ms: number }[];
  /** Index of the first run still in the window. */
  head: number;
  totalMs: number;
  /** Runs in the window that took longer than QUICK_RUN_MS. */
  slow: number;
}

/**
 * The time each account's jobs held a worker on this node lately. The quick lane serves only
 * light accounts: an account whose conversions ran to their limits a minute ago waits for a
 * regular worker like everyone else, however often it comes back with nothing running.
 */
export class RecentUse {
  private readonly accounts = new Map<string, AccountRuns>();

  constructor(private readonly lightMs = DEFAULT_LIGHT_MS, private readonly now: () => number = Date.now) {}

  record(account: string, ms: number): void {
    if (ms <= 0) return;
    let entry = this.accounts.get(account);
    if (!entry) this.accounts.set(account, (entry = { runs: [], head: 0, totalMs: 0, slow: 0 }));
    entry.runs.push({ at: this.now(), ms });
    entry.totalMs += ms;
    if (ms > QUICK_RUN_MS) entry.slow += 1;
    this.prune(account, entry);
  }

  isLight(account: string): boolean {
    const entry = this.current(account);
    return entry === undefined || entry.totalMs <= this.lightMs;
  }

  /**
   * Light, and every run of the window ended within QUICK_RUN_MS: an account whose conversions
   * are all small. One conversion that ran to its limit (10 s or more) takes an account out for
   * the window, where lightness lets it run that long six times.
   */
  onlyQuickRuns(account: string): boolean {
    const entry = this.current(account);
    return entry === undefined || (entry.totalMs <= this.lightMs && entry.slow === 0);
  }

  /** Accounts that are not light now (for a claim in a database: skipped by the quick lane). */
  heavy(): string[] {
    return [...this.accounts.keys()].filter((account) => !this.isLight(account));
  }

  /** The account's runs of the window, or undefined when it has none. */
  private current(account: string): AccountRuns | undefined {
    const entry = this.accounts.get(account);
    if (entry) this.prune(account, entry);
    return this.accounts.get(account);
  }

  private prune(account: string, entry: AccountRuns): void {
    const since = this.now() - WINDOW_MS;
    const { runs } = entry;
    while (entry.head < runs.length && runs[entry.head]!.at < since) {
      const { ms } = runs[entry.head]!;
      entry.totalMs -= ms;
      if (ms > QUICK_RUN_MS) entry.slow -= 1;
      entry.head += 1;
    }
    if (entry.head === runs.length) {
      this.accounts.delete(account);
    } else if (entry.head >= COMPACT_AFTER && entry.head * 2 >= runs.length) {
      entry.runs = runs.slice(entry.head);
      entry.head = 0;
    }
  }
}
