/**
 * The web pages' sign-in (src/sign-in/) on its own, with a clock of the test's: passwords hash
 * with scrypt and verify only themselves; a link works once and not after its time; a session
 * ends at its time, at sign-out, and when a new password is set; a name two accounts share signs
 * in neither (their id does); the CSRF comparison; what the sweep of a store removes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { AccountService } from '../../src/service/accounts.ts';
import { hashPassword, verifyPassword } from '../../src/sign-in/password.ts';
import { LINK_LIFETIME_MS, SESSION_LIFETIME_MS, WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';

const PASSWORD = 'a long enough password';

async function setup() {
  let now = Date.parse('2026-11-26T12:00:00Z');
  const clock = () => new Date(now);
  const store = await LowdbStore.open({ dir: null });
  const accounts = new AccountService(store, defaultServiceConfig(), clock);
  const signIn = new WebSignIn(store, accounts, clock);
  return { store, accounts, signIn, advance: (ms: number) => (now += ms) };
}

describe('passwords', () => {
  it('hash with scrypt, salted, and verify only the password they were made from', async () => {
    const one = await hashPassword(PASSWORD);
    const two = await hashPassword(PASSWORD);
    assert.match(one, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    assert.notEqual(one, two, 'a salt of its own each time');
    assert.equal(await verifyPassword(PASSWORD, one), true);
    assert.equal(await verifyPassword(`${PASSWORD}!`, one), false);
    // A well-formed hash whose N would take seconds and gigabytes: refused before any work.
    const started = performance.now();
    assert.equal(await verifyPassword(PASSWORD, `scrypt$${2 ** 21}$8$1$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`), false);
    assert.ok(performance.now() - started < 200, 'parameters past the ceiling are not computed');
    assert.equal(await verifyPassword(PASSWORD, 'bcrypt$whatever'), false);
    // Within the ceiling but refused by scrypt itself (N is not a power of two): no match, no throw.
    assert.equal(await verifyPassword(PASSWORD, `scrypt$1000$8$1$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`), false);
  });
});

describe('links and sessions', () => {
  it('a link sets the password once; the session it opens ends at its time', async () => {
    const { accounts, signIn, advance } = await setup();
    const account = await accounts.createAccount({ plan: 'free', name: 'alice' });
    const link = (await signIn.createLoginLink(account.id))!;
    assert.equal((await signIn.linkAccount(link.token))?.id, account.id);
    assert.equal(await signIn.setPassword(link.token, 'short', 'short'), 'too_short');
    assert.equal(await signIn.setPassword(link.token, PASSWORD, `${PASSWORD}x`), 'mismatch');
    const opened = await signIn.setPassword(link.token, PASSWORD, PASSWORD);
    assert.equal(typeof opened, 'object');
    assert.equal(await signIn.setPassword(link.token, PASSWORD, PASSWORD), 'link_invalid', 'once');
    const session = await signIn.session(typeof opened === 'object' ? opened.session : '');
    assert.equal(session?.account.id, account.id);
    assert.equal(WebSignIn.csrfMatches(session!, session!.csrf), true);
    assert.equal(WebSignIn.csrfMatches(session!, `${session!.csrf.slice(1)}x`), false);
    assert.equal(WebSignIn.csrfMatches(session!, undefined), false);
    assert.equal(SESSION_LIFETIME_MS, 7 * 24 * 3600 * 1000, 'the documented 7 days');
    advance(SESSION_LIFETIME_MS - 1);
    assert.ok(await signIn.session(typeof opened === 'object' ? opened.session : ''), 'still open a moment before its time');
    advance(1);
    assert.equal(await signIn.session(typeof opened === 'object' ? opened.session : ''), null, 'over at its time, used or not');
  });

  it('a link is worth nothing after its time, and once a newer one is made', async () => {
    const { accounts, signIn, advance } = await setup();
    const account = await accounts.createAccount({ plan: 'free', name: 'bob' });
    const first = (await signIn.createLoginLink(account.id))!;
    const second = (await signIn.createLoginLink(account.id))!;
    assert.equal(await signIn.linkAccount(first.token), null);
    assert.equal(LINK_LIFETIME_MS, 24 * 3600 * 1000, 'the documented 24 hours');
    advance(LINK_LIFETIME_MS - 1);
    assert.equal((await signIn.linkAccount(second.token))?.id, account.id, 'the newer link works until its time');
    advance(1);
    assert.equal(await signIn.linkAccount(second.token), null);
    assert.equal(await signIn.setPassword(second.token, PASSWORD, PASSWORD), 'link_invalid');
    assert.equal(await signIn.createLoginLink('acc_nobody'), null);
  });

  it('signs in by name or id; a shared name signs in neither; a new password ends the other sessions', async () => {
    const { accounts, signIn } = await setup();
    const carol = await accounts.createAccount({ plan: 'free', name: 'carol' });
    const twin = await accounts.createAccount({ plan: 'free', name: 'carol' });
    for (const account of [carol, twin]) {
      const link = (await signIn.createLoginLink(account.id))!;
      assert.equal(typeof (await signIn.setPassword(link.token, PASSWORD, PASSWORD)), 'object');
    }
    assert.equal(await signIn.signIn('carol', PASSWORD), null, 'two accounts are called carol');
    const byId = await signIn.signIn(carol.id, PASSWORD);
    assert.ok(byId);
    assert.equal(await signIn.signIn(carol.id, 'wrong password here'), null);
    assert.equal(await signIn.signIn('nobody', PASSWORD), null);
    const session = (await signIn.session(byId.session))!;
    const renewed = (await signIn.createLoginLink(carol.id))!;
    await signIn.setPassword(renewed.token, `${PASSWORD} two`, `${PASSWORD} two`);
    assert.equal(await signIn.session(byId.session), null, 'a new password ended it');
    await signIn.signOut(session);
    const again = (await signIn.signIn(carol.id, `${PASSWORD} two`))!;
    await signIn.signOut((await signIn.session(again.session))!);
    assert.equal(await signIn.session(again.session), null, 'signed out on the server');
  });

  it('expired links and sessions are removed by the store\'s prune, live ones kept', async () => {
    const { store, accounts, signIn, advance } = await setup();
    const account = await accounts.createAccount({ plan: 'free', name: 'dave' });
    const link = (await signIn.createLoginLink(account.id))!;
    const opened = await signIn.setPassword(link.token, PASSWORD, PASSWORD);
    assert.equal(typeof opened, 'object');
    await signIn.createLoginLink(account.id);
    advance(LINK_LIFETIME_MS + 1);
    assert.equal(await store.pruneWebTokens(new Date(Date.parse('2026-11-26T12:00:00Z') + LINK_LIFETIME_MS + 1).toISOString()), 1, 'the link went, the session stays');
    assert.ok(await signIn.session(typeof opened === 'object' ? opened.session : ''));
  });
});
