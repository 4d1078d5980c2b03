import type { Store } from '../store/types.ts';

export interface DayUsage {
  /** YYYY-MM-DD (UTC). */
  day: string;
  conversions: number;
  credits: number;
}

/** Conversions one chart reads at most: past this the oldest days show what was read (a flood of a day). */
const MAX_SCANNED = 20_000;
const PAGE = 500;
const DAY_MS = 86_400_000;

/**
 * Conversions made and credits charged per day (UTC) over the last `days` days, oldest first, for
 * the account page's chart: read from the account's conversions newest first (their ids sort by
 * creation), so only the window is read. Credits count on the day they were charged, for the
 * conversions made within the window.
 */
export async function dailyUsage(store: Store, accountId: string, now: Date, days = 30): Promise<DayUsage[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (days - 1) * DAY_MS;
  const usage = Array.from({ length: days }, (_, i): DayUsage => ({ day: new Date(first + i * DAY_MS).toISOString().slice(0, 10), conversions: 0, credits: 0 }));
  const slot = (iso: string | null) => {
    if (!iso) return undefined;
    const index = Math.floor((Date.parse(iso) - first) / DAY_MS);
    return index >= 0 && index < days ? usage[index] : undefined;
  };
  let before: string | undefined;
  for (let scanned = 0; scanned < MAX_SCANNED;) {
    const page = await store.listConversions({ accountId, before, limit: PAGE });
    for (const record of page) {
      if (Date.parse(record.created_at) < first) return usage;
      const made = slot(record.created_at);
      if (made) made.conversions++;
      const charged = slot(record.charged_at);
      if (charged) charged.credits += record.credits;
    }
    scanned += page.length;
    if (page.length < PAGE) break;
    before = page[page.length - 1]!.id;
  }
  return usage;
}
