/**
 * What AccountService records of a key's use: `last_used_at`, written at most once an hour, and
 * never over a revocation made at the same moment (both run under the key's lock).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AccountService } from '../../src/service/accounts.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';

describe('a key\'s last use', () => {
  it('is recorded at the first use and then at most once an hour', async () => {
    let now = Date.parse('2026-11-26T12:00:00Z');
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date(now));
    const account = await accounts.createAccount({ plan: 'free', name: 'k' });
    const { record, key } = await accounts.createKey(account.id, ['read'], 'ci');
    assert.equal(record.name, 'ci');
    assert.equal(record.last_used_at, undefined);
    await accounts.authenticate(key);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await store.getApiKey(record.id))?.last_used_at, '2026-11-26T12:00:00.000Z');
    now += 30 * 60_000;
    await accounts.authenticate(key);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await store.getApiKey(record.id))?.last_used_at, '2026-11-26T12:00:00.000Z', 'not again within the hour');
    now += 31 * 60_000;
    await accounts.authenticate(key);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await store.getApiKey(record.id))?.last_used_at, '2026-11-26T13:01:00.000Z');
  });

  it('never writes a key back unrevoked: uses and revocations at the same moment', async () => {
    let now = Date.parse('2026-11-26T12:00:00Z');
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date(now));
    const account = await accounts.createAccount({ plan: 'free', name: 'r' });
    for (let i = 0; i < 20; i++) {
      const { record, key } = await accounts.createKey(account.id, ['read']);
      now += 2 * 3600_000;
      await Promise.all([accounts.authenticate(key), accounts.revokeKey(record.id)]);
      for (let tick = 0; tick < 5; tick++) await new Promise((resolve) => setImmediate(resolve));
      assert.ok((await store.getApiKey(record.id))?.revoked_at, `key ${i} stays revoked`);
    }
  });
});
