import type { AccountRecord } from '../model/account.ts';
import { BYTES_PER_MB, type Plan } from '../model/plan.ts';
import type { Store } from '../store/types.ts';

const BRACKET_BYTES = 100 * BYTES_PER_MB;

/** The weight per started 100 MB of input (files up to 100 MB cost the weight once). */
export function conversionCost(weight: number, inputSize: number | null): number {
  const multiple = inputSize === null || inputSize <= BRACKET_BYTES ? 1 : Math.ceil(inputSize / BRACKET_BYTES);
  return weight * multiple;
}

/** The first instant of the month after `from` (UTC). */
export function nextMonthStart(from: Date): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
}

/**
 * Rolls the account into the current monthly period when `resets_at` has passed: the balance
 * starts again at the plan's allowance. Returns the updated record, or null when nothing changed.
 */
export function applyMonthlyReset(account: AccountRecord, plan: Plan, now: Date): AccountRecord | null {
  if (Date.parse(account.resets_at) > now.getTime()) return null;
  let periodStart = new Date(account.resets_at);
  let next = nextMonthStart(periodStart);
  while (next.getTime() <= now.getTime()) {
    periodStart = next;
    next = nextMonthStart(next);
  }
  return {
    ...account,
    credits_base: plan.monthly_allowance,
    credits_base_at: periodStart.toISOString(),
    resets_at: next.toISOString(),
  };
}

export interface Balance {
  /** Credits left after charges (what the account object shows). */
  remaining: number;
  /** Credits held by active conversions. */
  reserved: number;
  /** What a new submission may still reserve. */
  available: number;
}

export async function balanceOf(store: Store, account: AccountRecord): Promise<Balance> {
  const { charged, reserved } = await store.creditSums(account.id, account.credits_base_at);
  const remaining = Math.max(0, account.credits_base - charged);
  return { remaining, reserved, available: remaining - reserved };
}

/**
 * The credits left (`Balance.remaining`) of many accounts at once, for the owner's page: the
 * store sums every account's charges in one read (PostgreSQL: one statement), not one per account.
 */
export async function remainingOf(store: Store, accounts: readonly AccountRecord[]): Promise<Map<string, number>> {
  const charged = await store.chargedSince(accounts.map((account) => ({ accountId: account.id, sinceIso: account.credits_base_at })));
  return new Map(accounts.map((account) => [account.id, Math.max(0, account.credits_base - (charged.get(account.id) ?? 0))]));
}
