import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../src/errors/api-error.ts';
import type { AccountRecord, Scope } from '../../src/model/account.ts';
import type { AccountService, Caller, PeekedCaller } from '../../src/service/accounts.ts';
import type { RateDecision, RateLimiter } from '../../src/service/rate-limiter.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import type { AuthFailureLimiter } from './auth-failures.ts';

/**
 * What every keyed request passes before its handler runs, in this order: the maintenance
 * switch, the client address's allowance of failed authentications, the API key, the account's
 * requests-per-minute bucket, the key's scope.
 * `headers` receives the RateLimit-* headers as soon as they are known, so that a refusal after
 * the bucket (429, 403) carries them too. Throws the ApiError of the first check that fails.
 */
export type Admission = (authorization: string | null | undefined, scope: Scope, headers: Record<string, string>, req: IncomingMessage) => Promise<Caller>;

export interface AuthFailureGuard {
  limiter: AuthFailureLimiter;
  /** 0: no limit. Read at each request (SIGHUP may change it). */
  perMinute: () => number;
  /** The address failures are counted for (behind a trusted proxy, the forwarded one). */
  clientAddress: (req: IncomingMessage) => string;
}

/**
 * The same admission at once, from what is in memory: the same checks in the same order, for a
 * key that authenticated a moment ago (AccountService.authenticateNow) while the maintenance
 * switch, the key and its account are held in memory (StorePeek) and the request buckets are this
 * process's. Undefined, having taken nothing, where one of them cannot be read at once: the
 * Admission then runs from the start and decides (a switch that is on, a refused key included).
 * Throws the Admission's ApiError for an empty bucket and a missing scope. The allowance of failed
 * authentications is not consulted: a key that authenticated a moment ago passes it there too.
 */
export type AdmissionNow = (authorization: string | undefined, scope: Scope, headers: Record<string, string>) => PeekedCaller | undefined;

export function createAdmissionNow(system: ConversionSystem, limiter: RateLimiter): AdmissionNow {
  const takeNow = limiter.takeNow?.bind(limiter);
  if (takeNow === undefined) return () => undefined;
  return (authorization, scope, headers) => {
    const maintenance = system.maintenance.stateNow();
    if (maintenance === undefined || maintenance.enabled) return undefined;
    const caller = system.accounts.authenticateNow(bearerToken(authorization));
    if (caller === undefined) return undefined;
    spend(takeNow(caller.account.id, requestsPerMinute(system, caller.account)), headers);
    system.accounts.requireScope(caller, scope);
    return caller;
  };
}

export function createAdmission(system: ConversionSystem, limiter: RateLimiter, guard: AuthFailureGuard): Admission {
  return async (authorization, scope, headers, req) => {
    await refuseInMaintenance(system);
    const caller = await authenticate(system.accounts, guard, bearerToken(authorization), req);
    await takeRequest(system, limiter, caller.account, headers);
    system.accounts.requireScope(caller, scope);
    return caller;
  };
}

/** The maintenance switch: 503 api_disabled while it is on. */
export async function refuseInMaintenance(system: ConversionSystem): Promise<void> {
  const maintenance = await system.maintenance.state();
  if (maintenance.enabled) {
    const retryAfter = maintenance.retry_after;
    throw new ApiError('api_disabled', { params: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) } });
  }
}

/** One request from the account's requests-per-minute bucket (its RateLimit-* headers into `headers`); 429 when empty. */
export async function takeRequest(system: ConversionSystem, limiter: RateLimiter, account: AccountRecord, headers: Record<string, string>): Promise<void> {
  spend(await limiter.take(account.id, requestsPerMinute(system, account)), headers);
}

function requestsPerMinute(system: ConversionSystem, account: Readonly<AccountRecord>): number {
  return system.conversions.config.plans[account.plan].requests_per_minute;
}

/** The bucket's decision: its RateLimit-* headers into `headers`, and 429 when it refused. */
function spend(decision: RateDecision, headers: Record<string, string>): void {
  addRateHeaders(headers, decision);
  if (!decision.allowed) {
    throw new ApiError('rate_limited', {
      params: { retry_after: decision.retryAfterSeconds },
      details: { limit: 'requests_per_minute', requests_per_minute: decision.limit },
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
    });
  }
}

/**
 * The key, unless its address has used up its allowance of failures: then 429 before the key is
 * hashed or looked up, so guessing costs the daemon next to nothing and gets nowhere. A key that
 * authenticated a moment ago still passes (it is checked as always): clients sharing an address
 * with one that keeps failing (a NAT, a proxy missing from trusted_proxy) keep working.
 */
async function authenticate(accounts: AccountService, guard: AuthFailureGuard, bearer: string | undefined, req: IncomingMessage): Promise<Caller> {
  const perMinute = guard.perMinute();
  if (perMinute <= 0) return accounts.authenticate(bearer);
  if (accounts.authenticatedRecently(bearer)) {
    try {
      return await accounts.authenticate(bearer);
    } catch (error) {
      // Revoked since.
      if (isUnauthenticated(error)) guard.limiter.fail(guard.clientAddress(req), perMinute);
      throw error;
    }
  }
  const address = guard.clientAddress(req);
  const wait = guard.limiter.take(address, perMinute);
  if (wait !== null) {
    throw new ApiError('rate_limited', {
      params: { retry_after: wait },
      details: { limit: 'auth_failures_per_minute', auth_failures_per_minute: perMinute },
      headers: { 'Retry-After': String(wait) },
    });
  }
  try {
    const caller = await accounts.authenticate(bearer);
    guard.limiter.giveBack(address, perMinute);
    return caller;
  } catch (error) {
    if (!isUnauthenticated(error)) guard.limiter.giveBack(address, perMinute);
    throw error;
  }
}

function isUnauthenticated(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'unauthenticated';
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
