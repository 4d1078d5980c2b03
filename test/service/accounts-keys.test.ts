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

describe('a caller at once (authenticateNow): only where authenticate would answer the same', () => {
  it('for a key that authenticated a moment ago, until it is revoked', async () => {
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date());
    const account = await accounts.createAccount({ plan: 'pro', name: 'now' });
    const { record, key } = await accounts.createKey(account.id, ['read']);
    assert.equal(accounts.authenticateNow(key), undefined, 'not before it authenticated: hashing and the failure allowance are the async way\'s');
    await accounts.authenticate(key);
    const caller = accounts.authenticateNow(key);
    assert.ok(caller && !(caller instanceof Promise));
    assert.equal(caller.account.id, account.id);
    assert.equal(caller.key.id, record.id);
    assert.equal(accounts.authenticateNow(`${key}x`), undefined);
    assert.equal(accounts.authenticateNow(undefined), undefined);
    await accounts.revokeKey(record.id);
    assert.equal(accounts.authenticateNow(key), undefined, 'revoked: at once');
    await assert.rejects(accounts.authenticate(key), /unauthenticated/);
  });

  it('not while a monthly reset is due (authenticate writes it), then again', async () => {
    let now = Date.parse('2026-11-26T12:00:00Z');
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date(now));
    const account = await accounts.createAccount({ plan: 'free', name: 'reset' });
    const { key } = await accounts.createKey(account.id, ['read']);
    await accounts.authenticate(key);
    assert.ok(accounts.authenticateNow(key));
    now = Date.parse(account.resets_at) + 1000;
    assert.equal(accounts.authenticateNow(key), undefined, 'the reset is due');
    const caller = await accounts.authenticate(key);
    assert.ok(Date.parse(caller.account.resets_at) > now, 'authenticate rolled the period over');
    assert.equal(accounts.authenticateNow(key)?.account.resets_at, caller.account.resets_at);
  });

  it('not from a store that holds nothing in memory (no peek)', async () => {
    const lowdb = await LowdbStore.open({ dir: null });
    const store = new Proxy(lowdb, { get: (target, property) => (property === 'peek' ? undefined : Reflect.get(target, property, target)) });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date());
    const account = await accounts.createAccount({ plan: 'pro', name: 'nopeek' });
    const { key } = await accounts.createKey(account.id, ['read']);
    await accounts.authenticate(key);
    assert.equal(accounts.authenticateNow(key), undefined);
  });

  it('notes the key\'s use as authenticate does', async () => {
    let now = Date.parse('2026-11-26T12:00:00Z');
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig(), () => new Date(now));
    const account = await accounts.createAccount({ plan: 'pro', name: 'use' });
    const { record, key } = await accounts.createKey(account.id, ['read']);
    await accounts.authenticate(key);
    now += 2 * 3600_000;
    assert.ok(accounts.authenticateNow(key));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await store.getApiKey(record.id))?.last_used_at, '2026-11-26T14:00:00.000Z');
  });
});
