import { ApiError } from '../errors/api-error.ts';
import type { AccountRecord } from '../model/account.ts';
import type { Plan } from '../model/plan.ts';
import type { Store } from '../store/types.ts';
import { balanceOf } from './credits.ts';
import type { Held } from './upload-holds.ts';

/**
 * The limits a new submission must pass (spec 8, DESIGN.md), in this order: concurrent
 * conversions, conversions per window, credits. Uploads in flight (`held`) count as active
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
