/**
 * The admission at once (daemon/http/admission.ts, AdmissionNow) on a real system: the async
 * admission's checks in its order, one request taken from the bucket per admission, and nothing
 * taken where it cannot say what the async admission would (a key not authenticated a moment ago,
 * the maintenance switch on, a revoked key).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAdmissionNow } from '../../daemon/http/admission.ts';
import { RequestRateLimiter } from '../../src/service/rate-limiter.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { openTempSystem, type TempSystem } from '../helpers/temp-system.ts';

describe('the admission at once', () => {
  let opened: TempSystem;
  let system: ConversionSystem;
  before(async () => {
    opened = await openTempSystem('convd-admission-now-');
    system = opened.system;
  });
  after(() => opened.close());

  it('takes one request per admission, and none where it answers undefined', async () => {
    // A clock that stands still: no request comes back to the bucket while the switch is written
    // (two flushes, slow on a slow disk), so the counts below are exact.
    const admitNow = createAdmissionNow(system, new RequestRateLimiter(() => 0));
    const account = await system.accounts.createAccount({ plan: 'pro', name: 'at-once' });
    const { record, key } = await system.accounts.createKey(account.id, ['read']);
    const bearer = `Bearer ${key}`;
    const admit = (scope: 'read' | 'convert' = 'read') => {
      const headers: Record<string, string> = {};
      return { caller: admitNow(bearer, scope, headers), headers };
    };

    assert.deepEqual(admit(), { caller: undefined, headers: {} }, 'not authenticated a moment ago: the async way, which hashes and counts failures');
    await system.accounts.authenticate(key);
    const first = admit();
    assert.equal(first.caller?.account.id, account.id);
    const remaining = Number(first.headers['ratelimit-remaining']);
    assert.equal(Number(admit().headers['ratelimit-remaining']), remaining - 1, 'one request taken');

    await system.maintenance.set(true, 30);
    assert.deepEqual(admit(), { caller: undefined, headers: {} }, 'the switch on: the async way answers 503');
    await system.maintenance.set(false);
    assert.equal(Number(admit().headers['ratelimit-remaining']), remaining - 2, 'none taken while the switch was on');

    assert.throws(() => admit('convert'), /forbidden/, 'a missing scope: refused at once, after the bucket as the async way');
    assert.equal(Number(admit().headers['ratelimit-remaining']), remaining - 4);

    await system.accounts.revokeKey(record.id);
    assert.deepEqual(admit(), { caller: undefined, headers: {} }, 'revoked: the async way refuses it and counts the failure');
  });

  it('never where the buckets are asked elsewhere (no takeNow: the database\'s, shared by the nodes)', async () => {
    const shared = { take: () => Promise.reject(new Error('not asked')) };
    const admitNow = createAdmissionNow(system, shared);
    const account = await system.accounts.createAccount({ plan: 'pro', name: 'shared' });
    const { key } = await system.accounts.createKey(account.id, ['read']);
    await system.accounts.authenticate(key);
    assert.equal(admitNow(`Bearer ${key}`, 'read', {}), undefined);
  });
});
