import type { DayUsage, Store } from '../store/types.ts';

export type { DayUsage } from '../store/types.ts';

const DAY_MS = 86_400_000;

/**
 * Conversions made and credits charged per day (UTC) over the last `days` days, oldest first, for
 * the account page's chart: the store sums them (PostgreSQL: one GROUP BY), and the days it has
 * nothing for are zero. Credits count on the day they were charged, for the conversions made
 * within the window.
 */
export async function dailyUsage(store: Store, accountId: string, now: Date, days = 30): Promise<DayUsage[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (days - 1) * DAY_MS;
  const usage = Array.from({ length: days }, (_, i): DayUsage => ({ day: new Date(first + i * DAY_MS).toISOString().slice(0, 10), conversions: 0, credits: 0 }));
  const slots = new Map(usage.map((day) => [day.day, day]));
  for (const summed of await store.usageByDay(accountId, new Date(first).toISOString())) {
    // A day past today (a clock that went back) has no place on the chart.
    const slot = slots.get(summed.day);
    if (!slot) continue;
    slot.conversions += summed.conversions;
    slot.credits += summed.credits;
  }
  return usage;
}
