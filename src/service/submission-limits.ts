import { ApiError } from '../errors/api-error.ts';
import type { AccountRecord } from '../model/account.ts';
import type { Plan } from '../model/plan.ts';
import type { Store } from '../store/types.ts';
import { balanceOf } from './credits.ts';
import type { Held } from './upload-holds.ts';

/**
 * The limits a new submission must pass, in this order: concurrent conversions, conversions
 * per window, engine time this hour, credits. Uploads in flight (`held`) count as active
 * conversions, as conversions made in the window, and with the credits they were estimated to
 * cost. Throws the ApiError of the first limit that fails. The caller holds the account's lock,
 * so the checks and what the caller then records are one step.
 */
export async function checkSubmissionLimits(
  store: Store,
  account: AccountRecord,
  plan: Plan,
  cost: number,
  held: Held,
  nowMs: number,
): Promise<void> {
  const active = (await store.countActive(account.id)) + held.places;
  if (active >= plan.concurrent_conversions) {
    throw new ApiError('concurrency_limit', { params: { limit: plan.concurrent_conversions }, details: { limit: plan.concurrent_conversions } });
  }

  const windowMs = plan.window_seconds * 1000;
  const recent = (await store.countCreatedSince(account.id, nowMs - windowMs)) + held.places;
  if (recent >= plan.conversions_per_window) {
    // A place frees when the conversion that filled the window leaves it; uploads in flight
    // take the places of the newest ones.
    const nth = Math.max(1, plan.conversions_per_window - held.places);
    const filledAt = (await store.createdAtOfNewest(account.id, nth)) ?? nowMs;
    const retryAfter = Math.max(1, Math.ceil((filledAt + windowMs - nowMs) / 1000));
    throw new ApiError('rate_limited', {
      params: { retry_after: retryAfter },
      details: { limit: 'conversions_per_window', conversions_per_window: plan.conversions_per_window, window_seconds: plan.window_seconds },
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  await checkEngineTime(store, account, plan, nowMs);

  if (plan.credits_type === 'unmetered') return;
  const available = (await balanceOf(store, account)).available - held.credits;
  if (available < cost) {
    const code = plan.credits_type === 'free_api_credits' ? 'free_quota_exhausted' : 'insufficient_credits';
    const remaining = Math.max(0, available);
    throw new ApiError(code, {
      params: { cost, remaining, allowance: plan.monthly_allowance },
      details: { cost, remaining, monthly_allowance: plan.monthly_allowance },
    });
  }
}

const HOUR_MS = 3_600_000;

/** The account's use of its plan's engine time in the current clock hour (UTC). */
export interface EngineTimeUse {
  /** Seconds per hour; 0: the plan has no allowance. */
  allowance_seconds: number;
  used_seconds: number;
  /** Null without an allowance. */
  remaining_seconds: number | null;
  /** The start of the next hour, when the count starts again. */
  resets_at: string;
}

export async function engineTimeUse(store: Store, accountId: string, plan: Plan, nowMs: number): Promise<EngineTimeUse> {
  const hour = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  const usedMs = await store.engineTimeSince(accountId, hour);
  const allowance = plan.engine_seconds_per_hour;
  return {
    allowance_seconds: allowance,
    // Whole seconds, rounded so that "remaining 0" is exactly "refused".
    used_seconds: Math.floor(usedMs / 1000),
    remaining_seconds: allowance > 0 ? Math.max(0, Math.ceil((allowance * 1000 - usedMs) / 1000)) : null,
    resets_at: new Date(hour + HOUR_MS).toISOString(),
  };
}

/**
 * Conversions draw on the plan's engine time whether they succeed or fail: work that runs to its
 * limit is not free. Counted per clock hour over the conversions submitted in it (one index range
 * read); a conversion accepted before the allowance ran out still runs.
 */
async function checkEngineTime(store: Store, account: AccountRecord, plan: Plan, nowMs: number): Promise<void> {
  if (plan.engine_seconds_per_hour <= 0) return;
  const use = await engineTimeUse(store, account.id, plan, nowMs);
  if (use.remaining_seconds! > 0) return;
  const retryAfter = Math.max(1, Math.ceil((Date.parse(use.resets_at) - nowMs) / 1000));
  throw new ApiError('engine_time_exhausted', {
    params: { allowance_seconds: use.allowance_seconds, retry_after: retryAfter },
    details: { limit: 'engine_seconds_per_hour', engine_seconds_per_hour: use.allowance_seconds, used_seconds: use.used_seconds, resets_at: use.resets_at },
    headers: { 'Retry-After': String(retryAfter) },
  });
}
