import { ApiError } from '../../src/errors/api-error.ts';
import type { Scope } from '../../src/model/account.ts';
import type { Caller } from '../../src/service/accounts.ts';
import type { RateDecision, RequestRateLimiter } from '../../src/service/rate-limiter.ts';
import type { ConversionSystem } from '../../src/service/system.ts';

/**
 * What every keyed request passes before its handler runs, in this order: the maintenance
 * switch, the API key, the account's requests-per-minute bucket, the key's scope.
 * `headers` receives the RateLimit-* headers as soon as they are known, so that a refusal after
 * the bucket (429, 403) carries them too. Throws the ApiError of the first check that fails.
 */
export type Admission = (authorization: string | null | undefined, scope: Scope, headers: Record<string, string>) => Promise<Caller>;

export function createAdmission(system: ConversionSystem, limiter: RequestRateLimiter): Admission {
  const { accounts, store } = system;
  return async (authorization, scope, headers) => {
    const settings = await store.getSettings();
    if (settings.maintenance.enabled) {
      const retryAfter = settings.maintenance.retry_after;
      throw new ApiError('api_disabled', { params: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) } });
    }
    const caller = await accounts.authenticate(bearerToken(authorization));
    const decision = limiter.take(caller.account.id, system.conversions.config.plans[caller.account.plan].requests_per_minute);
    addRateHeaders(headers, decision);
    if (!decision.allowed) {
      throw new ApiError('rate_limited', {
        params: { retry_after: decision.retryAfterSeconds },
        details: { limit: 'requests_per_minute', requests_per_minute: decision.limit },
        headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      });
    }
    accounts.requireScope(caller, scope);
    return caller;
  };
}

function addRateHeaders(headers: Record<string, string>, decision: RateDecision): void {
  headers['ratelimit-limit'] = String(decision.limit);
  headers['ratelimit-remaining'] = String(decision.remaining);
  headers['ratelimit-reset'] = String(decision.resetSeconds);
}

function bearerToken(header: string | null | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
