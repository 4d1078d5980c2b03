/**
 * Records for the store suites: a conversion with every field (ids made in creation order, as the
 * service makes them), an account with a credit period, and a web token.
 */
import { randomBytes } from 'node:crypto';
import type { AccountRecord } from '../../src/model/account.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { newConversionId } from '../../src/model/ids.ts';
import type { WebTokenRecord } from '../../src/store/types.ts';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

// Creation times step by a second from an hour ago: recent enough for the 24 h idempotency window.
let clock = Date.now() - HOUR;

/** A conversion record with every field; ids are made in creation order, like the service does. */
export function conversion(accountId: string, overrides: Partial<ConversionRecord> = {}): ConversionRecord {
  clock += 1000;
  const created = new Date(overrides.created_at ? Date.parse(overrides.created_at) : clock);
  return {
    id: newConversionId(created.getTime()),
    account_id: accountId,
    status: 'queued',
    source: 'png',
    target: 'webp',
    variant: null,
    options: { quality: 80 },
    original_name: 'photo.png',
    input_size: 1234,
    input: { kind: 'file', sha256: 'ab'.repeat(32) },
    progress: null,
    reserved_credits: 1,
    credits: 0,
    charged_at: null,
    created_at: created.toISOString(),
    started_at: null,
    finished_at: null,
    result: null,
    error: null,
    callback_url: null,
    idempotency_key: null,
    request_fingerprint: null,
    ...overrides,
  };
}

export function account(id: string, creditsBaseAt: string): AccountRecord {
  return {
    id, name: id, plan: 'lite', created_at: creditsBaseAt, credits_base: 1000, credits_base_at: creditsBaseAt,
    resets_at: new Date(Date.now() + 20 * DAY).toISOString(), webhook_secret: 'whsec_test',
  };
}


/** A web token (sign-in link or session) under a hash of its own, valid for an hour unless told. */
export function webToken(accountId: string, kind: WebTokenRecord['kind'], overrides: Partial<WebTokenRecord> = {}): WebTokenRecord {
  return {
    hash: randomBytes(32).toString('hex'),
    kind,
    account_id: accountId,
    created_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + HOUR).toISOString(),
    ...(kind === 'session' ? { csrf: randomBytes(16).toString('hex') } : {}),
    ...overrides,
  };
}
