/** How far back an account's runs count towards being heavy. */
const WINDOW_MS = 5 * 60_000;
/** An account whose runs held workers longer than this within the window is not light. */
const DEFAULT_LIGHT_MS = 60_000;
/** A run that ended within this long was a quick one (the workers' quick lane moves a job on after it). */
export const QUICK_RUN_MS = 2000;

/**
 * The time each account's jobs held a worker on this node lately. The quick lane serves only
 * light accounts: an account whose conversions ran to their limits a minute ago waits for a
 * regular worker like everyone else, however often it comes back with nothing running.
 */
export class RecentUse {
  private readonly runs = new Map<string, { at: number; ms: number }[]>();

  constructor(private readonly lightMs = DEFAULT_LIGHT_MS, private readonly now: () => number = Date.now) {}

  record(account: string, ms: number): void {
    if (ms <= 0) return;
    let list = this.runs.get(account);
    if (!list) this.runs.set(account, (list = []));
    list.push({ at: this.now(), ms });
    this.prune(account, list);
  }

  isLight(account: string): boolean {
    const list = this.runs.get(account);
    if (!list) return true;
    this.prune(account, list);
    let total = 0;
    for (const run of list) total += run.ms;
    return total <= this.lightMs;
  }

  /**
   * Light, and every run of the window ended within QUICK_RUN_MS: an account whose conversions
   * are all small. One conversion that ran to its limit (10 s or more) takes an account out for
   * the window, where lightness lets it run that long six times.
   */
  onlyQuickRuns(account: string): boolean {
    if (!this.isLight(account)) return false;
    return (this.runs.get(account) ?? []).every((run) => run.ms <= QUICK_RUN_MS);
  }

  /** Accounts that are not light now (for a claim in a database: skipped by the quick lane). */
  heavy(): string[] {
    return [...this.runs.keys()].filter((account) => !this.isLight(account));
  }

  private prune(account: string, list: { at: number; ms: number }[]): void {
    const since = this.now() - WINDOW_MS;
    let drop = 0;
    while (drop < list.length && list[drop]!.at < since) drop += 1;
    if (drop > 0) list.splice(0, drop);
    if (list.length === 0) this.runs.delete(account);
  }
}
