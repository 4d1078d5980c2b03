/**
 * ConversionService.getNow: the record from the store's memory, at once, only where `get` would
 * answer it as it is: the account's own, and not due to expire (`get` expires it first).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ConversionSystem } from '../../src/service/system.ts';
import { conversion, DAY } from '../helpers/store-records.ts';
import { openTempSystem, type TempSystem } from '../helpers/temp-system.ts';

describe('a conversion read at once (getNow)', () => {
  let opened: TempSystem;
  let system: ConversionSystem;
  before(async () => {
    opened = await openTempSystem('convd-read-now-');
    system = opened.system;
  });
  after(() => opened.close());

  const succeeded = (accountId: string, expiresAt: number) => conversion(accountId, {
    status: 'succeeded', progress: 100, finished_at: new Date().toISOString(),
    result: { filename: 'photo.webp', size: 5, mime: 'image/webp', expires_at: new Date(expiresAt).toISOString() },
  });

  it('is the account\'s record as get reads it, and nobody else\'s', async () => {
    const owner = await system.accounts.createAccount({ plan: 'pro', name: 'owner' });
    const other = await system.accounts.createAccount({ plan: 'pro', name: 'other' });
    const record = succeeded(owner.id, Date.now() + DAY);
    await system.store.insertConversion(record);
    const now = system.conversions.getNow(owner, record.id);
    assert.ok(now && !(now instanceof Promise));
    assert.deepEqual({ ...now }, await system.conversions.get(owner, record.id));
    assert.equal(system.conversions.getNow(other, record.id), undefined, 'another account\'s: get says not_found');
    assert.equal(system.conversions.getNow(owner, 'cnv_01aaaaaaaaaaaaaaaaaaaaaaaa'), undefined);
    assert.equal(system.conversions.getNow(owner, 'not-an-id'), undefined);
  });

  it('not once its result is due to expire: get expires it, then it is read at once as expired', async () => {
    const owner = await system.accounts.createAccount({ plan: 'pro', name: 'expiring' });
    const record = succeeded(owner.id, Date.now() - 1000);
    await system.store.insertConversion(record);
    assert.equal(system.conversions.getNow(owner, record.id), undefined);
    assert.equal((await system.conversions.get(owner, record.id)).status, 'expired');
    assert.equal(system.conversions.getNow(owner, record.id)?.status, 'expired');
  });
});
