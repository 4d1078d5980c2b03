/**
 * Failed authentications are limited per client address (auth_failures_per_minute, default 60):
 * the limiter on its own (refill, give-back, bounded memory, IPv6 per /64), then through a real
 * daemon behind a trusted proxy, where the forwarded address is the client's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { callAdminSocket } from '../../daemon/admin/socket.ts';
import { addressKey, AuthFailureLimiter } from '../../daemon/http/auth-failures.ts';
import { call, startConvd, waitUntil, type Answer, type Convd } from '../helpers/ops-support.ts';

describe('AuthFailureLimiter', () => {
  it('allows `perMinute` failures at once, then one more every 60/perMinute seconds, with the exact wait', () => {
    let now = 1_000_000;
    const limiter = new AuthFailureLimiter(100, () => now);
    for (let i = 0; i < 30; i++) assert.equal(limiter.take('192.0.2.1', 30), null, `attempt ${i + 1}`);
    assert.equal(limiter.take('192.0.2.1', 30), 2, 'one attempt comes back every 2 s');
    now += 1_000;
    assert.equal(limiter.take('192.0.2.1', 30), 1);
    now += 1_000;
    assert.equal(limiter.take('192.0.2.1', 30), null);
    assert.equal(limiter.take('192.0.2.1', 30), 2);
    assert.equal(limiter.take('192.0.2.2', 30), null, 'another address has its own allowance');
  });

  it('forgets an address whose attempts all succeeded, and keeps nothing for successes', () => {
    const limiter = new AuthFailureLimiter();
    for (let i = 0; i < 1000; i++) {
      assert.equal(limiter.take(`198.51.100.${i % 250}`, 10), null);
      limiter.giveBack(`198.51.100.${i % 250}`, 10);
    }
    assert.equal(limiter.size, 0);
  });

  it('stays within its capacity under a flood of addresses, dropping the least recently used', () => {
    const limiter = new AuthFailureLimiter(100);
    limiter.fail('203.0.113.1', 1);
    for (let i = 0; i < 10_000; i++) limiter.take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 5);
    assert.equal(limiter.size, 100);
    assert.equal(limiter.take('203.0.113.1', 1), null, 'the oldest entry went first');
  });

  it('counts a failure without a prior attempt, never below zero', () => {
    let now = 0;
    const limiter = new AuthFailureLimiter(100, () => now);
    for (let i = 0; i < 5; i++) limiter.fail('192.0.2.9', 2);
    assert.equal(limiter.take('192.0.2.9', 2), 30);
    now += 30_000;
    assert.equal(limiter.take('192.0.2.9', 2), null);
  });

  it('is off at 0', () => {
    const limiter = new AuthFailureLimiter();
    for (let i = 0; i < 100; i++) assert.equal(limiter.take('192.0.2.1', 0), null);
    assert.equal(limiter.size, 0);
  });

  it('counts IPv6 clients per /64', () => {
    assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
    assert.equal(addressKey('2001:db8:0:1::5'), '2001:db8:0:1::/64');
    assert.equal(addressKey('2001:0DB8:0000:0001:ffff:1:2:3'), '2001:db8:0:1::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    // IPv4-mapped IPv6, in both spellings: the IPv4 client, not one /64 shared by every IPv4 client.
    assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(addressKey('::ffff:c000:201'), '192.0.2.1');
    assert.equal(addressKey('0:0:0:0:0:ffff:198.51.100.7'), '198.51.100.7');
    assert.notEqual(addressKey('::ffff:192.0.2.1'), addressKey('::ffff:192.0.2.2'));
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(addressKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
    const limiter = new AuthFailureLimiter();
    assert.equal(limiter.take('2001:db8:0:1::5', 1), null);
    assert.notEqual(limiter.take('2001:db8:0:1:abcd::9', 1), null, 'the same /64');
    assert.equal(limiter.take('2001:db8:0:2::5', 1), null, 'the next /64');
  });
});

describe('failed authentications through the daemon', () => {
  const ATTACKER = '203.0.113.7';
  const NEIGHBOUR = '198.51.100.9';
  let daemon: Convd;
  const from = (address: string, path: string, key: string | null, method = 'GET'): Promise<Answer> =>
    call(daemon, path, { method, key, headers: { 'x-forwarded-for': address } });

  before(async () => {
    daemon = await startConvd({ args: ['--trusted-proxy', '127.0.0.1'] });
  });
  after(() => daemon.dispose());

  it('successful requests are not counted', async () => {
    const fresh = (await callAdminSocket(daemon.dataDir, 'keys.create', { account: daemon.accountId, scopes: 'read' })) as { key: string };
    for (let i = 0; i < 80; i++) assert.equal((await from(NEIGHBOUR, '/v1/account', fresh.key)).status, 200);
    for (let i = 0; i < 60; i++) assert.equal((await from(NEIGHBOUR, '/v1/account', 'cvk_not-a-key-at-all')).status, 401, `failure ${i + 1}`);
    assert.equal((await from(NEIGHBOUR, '/v1/account', 'cvk_not-a-key-at-all')).status, 429);
  });

  it('100 bad keys from one address: 60 answers 401, then 429 with Retry-After before any key lookup', async () => {
    // The key the daemon printed authenticates before the flood, as a client of that address would.
    assert.equal((await from(ATTACKER, '/v1/account', daemon.apiKey)).status, 200);
    const statuses: number[] = [];
    let refused: Answer | undefined;
    for (let i = 0; i < 100; i++) {
      // Keyed routes through h3 and the hot read alike, with made-up keys and without one.
      const path = i % 3 === 0 ? '/v1/conversions/cnv_01m8000000000000000000000' : '/v1/account';
      const answer = await from(ATTACKER, path, i % 5 === 0 ? null : `cvk_guess${i}`, i % 7 === 0 ? 'HEAD' : 'GET');
      statuses.push(answer.status);
      if (answer.status === 429 && answer.body !== '') refused ??= answer;
    }
    assert.deepEqual(statuses.slice(0, 60), Array(60).fill(401));
    assert.deepEqual(statuses.slice(60), Array(40).fill(429));
    assert.ok(refused);
    assert.equal(refused.body.error.code, 'rate_limited');
    assert.deepEqual(refused.body.error.details, { limit: 'auth_failures_per_minute', auth_failures_per_minute: 60 });
    assert.match(refused.headers.get('retry-after') ?? '', /^[12]$/, 'one attempt comes back every second');
    assert.match(refused.body.error.message, /^Too many requests; try again in [12] seconds\.$/);
    assert.equal(refused.headers.get('ratelimit-limit'), null, 'no account, no account bucket');

    // The same key still passes from there; a key not seen before waits like any other there,
    // and works at once from an address of its own.
    assert.equal((await from(ATTACKER, '/v1/account', daemon.apiKey)).status, 200);
    const fresh = (await callAdminSocket(daemon.dataDir, 'keys.create', { account: daemon.accountId, scopes: 'read' })) as { key: string };
    assert.equal((await from(ATTACKER, '/v1/account', fresh.key)).status, 429);
    assert.equal((await from('192.0.2.44', '/v1/account', fresh.key)).status, 200);
    assert.equal((await from('192.0.2.44', '/v1/account', 'cvk_elsewhere')).status, 401, 'another address has its own allowance');
    assert.equal((await call(daemon, '/v1/account', { key: 'cvk_from-the-proxy-itself' })).status, 401, 'and so has the proxy');

    // Log lines are written in batches.
    await waitUntil('the request lines with the forwarded address', () =>
      daemon.logs().filter((l) => l.event === 'request' && l.client === ATTACKER && l.status === 429).length >= 40 ? true : undefined, 5_000);
  });

  it('answers /healthz at once during a flood of bad keys from many addresses', async (t) => {
    let flooding = true;
    let sent = 0;
    // Eight addresses, each well past its allowance of 60.
    const flood = Promise.all(Array.from({ length: 8 }, async (_, worker) => {
      while (flooding) await from(`192.0.2.${100 + worker}`, '/v1/account', `cvk_flood${sent++}`);
    }));
    const times: number[] = [];
    while (times.length < 20 || sent < 8 * 150) {
      const started = performance.now();
      assert.equal((await call(daemon, '/healthz', { key: null })).status, 200);
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    flooding = false;
    await flood;
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    t.diagnostic(`${sent} bad-key requests; ${times.length} /healthz: median ${median.toFixed(1)} ms, slowest ${times.at(-1)!.toFixed(1)} ms`);
    assert.ok(median < 100, `median /healthz ${median.toFixed(1)} ms`);
  });
});
