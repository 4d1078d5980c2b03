import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import Stripe from 'stripe';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import { WebhookDeliverer, type WebhookDelivererOptions } from '../../src/webhooks/deliverer.ts';
import { verifyWebhook } from '../../src/webhooks/index.ts';
import { RETRY_WAITS_MS } from '../../src/webhooks/schedule.ts';
import { type Receiver, type Responder, selfSignedCertificate, sleep, startReceiver, waitFor } from '../helpers/webhooks-receiver.ts';

const ACCOUNT = 'acc_webhooks';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function conversion(id: string, status: 'succeeded' | 'failed' = 'succeeded'): PublicConversion {
  const self = `https://convd.example/v1/conversions/${id}`;
  return {
    id,
    object: 'conversion',
    status,
    source: 'png',
    target: 'webp',
    variant: null,
    options: { quality: 80 },
    original_name: 'Grüße ✓.png', // non-ASCII: the bytes sent must be the UTF-8 bytes signed
    input_size: 1234,
    progress: null,
    credits: 1,
    created_at: '2025-01-01T00:00:00.000Z',
    started_at: '2025-01-01T00:00:01.000Z',
    finished_at: '2025-01-01T00:00:02.000Z',
    result: null,
    warnings: [],
    error: status === 'failed' ? { code: 'conversion_failed', message: 'broken' } : null,
    links: { self, download: `${self}/download` },
  };
}

/** Everything one test needs; torn down by afterEach. */
interface Rig {
  dir: string;
  store: LowdbStore;
  receiver: Receiver;
  secrets: Map<string, string>;
  deliverers: WebhookDeliverer[];
  deliverer(options?: Partial<WebhookDelivererOptions>): WebhookDeliverer;
}

const rigs: Rig[] = [];

async function rig(respond: Responder, tls = true): Promise<Rig> {
  const dir = await mkdtemp(join(tmpdir(), 'convd-webhooks-'));
  const r: Rig = {
    dir,
    store: await LowdbStore.open({ dir, shards: 1 }),
    receiver: await startReceiver({ tls, respond }),
    secrets: new Map([[ACCOUNT, 'whsec_first']]),
    deliverers: [],
    deliverer(options = {}) {
      const d = new WebhookDeliverer({
        store: r.store,
        secretFor: async (account) => {
          const secret = r.secrets.get(account);
          if (!secret) throw new Error(`no account ${account}`);
          return secret;
        },
        allowInsecure: true,
        trustedCa: selfSignedCertificate().cert,
        scheduleScale: 0.001,
        random: () => 0.5, // no jitter unless a test asks for it
        ...options,
      });
      r.deliverers.push(d);
      return d;
    },
  };
  rigs.push(r);
  return r;
}

afterEach(async () => {
  for (const r of rigs.splice(0)) {
    for (const d of r.deliverers) await d.stop();
    await r.receiver.close();
    await r.store.close();
    await rm(r.dir, { recursive: true, force: true });
  }
});

async function delivery(store: LowdbStore, id: string): Promise<DeliveryRecord> {
  const record = await store.getDelivery(id);
  assert.ok(record, `delivery ${id} missing`);
  return record;
}

function hmacOf(secret: string, t: string, body: Buffer): string {
  return createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${t}.`), body])).digest('hex');
}

describe('WebhookDeliverer against a real HTTPS receiver', () => {
  it('retries a 500 with the same delivery id, delivers once, sends exactly the signed bytes', async () => {
    const r = await rig((_req, i) => ({ status: i === 0 ? 500 : 200 }));
    const d = r.deliverer();
    await d.start();
    const data = conversion('cnv_500then200');
    const queued = await d.enqueue({ conversionId: data.id, accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data });
    assert.match(queued.id, UUID);
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'delivered', 5000, 'delivered');
    await sleep(400); // longer than the next wait (300 ms at this scale): nothing more may arrive
    assert.equal(r.receiver.requests.length, 2);

    const expectedBody = JSON.stringify({ event: 'conversion.succeeded', data });
    for (const req of r.receiver.requests) {
      assert.equal(req.method, 'POST');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['x-service-event'], 'conversion.succeeded');
      assert.equal(req.headers['x-service-delivery'], queued.id);
      assert.equal(req.body.toString('utf8'), expectedBody);
      assert.deepEqual(JSON.parse(req.body.toString('utf8')), { event: 'conversion.succeeded', data });
      // Independent check of the signature over the bytes received.
      const header = String(req.headers['x-service-signature']);
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
      assert.ok(match, header);
      assert.ok(Math.abs(Number(match[1]) - Date.now() / 1000) < 10);
      assert.equal(match[2], hmacOf('whsec_first', match[1], req.body));
      assert.equal(verifyWebhook(req.body, header, 'whsec_first').ok, true);
    }
    const record = await delivery(r.store, queued.id);
    // Waits run from the start of an attempt (the persisted `at`); on the wire the first request
    // also carries the first TLS handshake, so the gap seen by the receiver is looser.
    const planned = Date.parse(record.attempts[1].at) - Date.parse(record.attempts[0].at);
    // Never early; late only by as long as the first attempt took (its first use loads the HTTP
    // client and does a TLS handshake, which on a loaded machine can take a few hundred ms).
    assert.ok(planned >= 60 && planned < 60 + 3000, `second attempt ${planned} ms after the first, expected 60`);
    // On the wire, measured from the start of the first attempt: the gap between the two arrivals
    // alone shrinks by however long the first request took to arrive (its TLS handshake on a
    // loaded machine can take longer than the 60 ms wait), so it cannot tell early from slow.
    const sinceFirstStart = performance.timeOrigin + r.receiver.requests[1].atMs - Date.parse(record.attempts[0].at);
    assert.ok(sinceFirstStart >= 60 - 2 && sinceFirstStart < 60 + 3000, `second request arrived ${sinceFirstStart} ms after the first attempt started, expected 60 or a little more`);

    assert.deepEqual(record.attempts.map((a) => a.status_code), [500, 200]);
    assert.equal(record.next_attempt_at, null);
    assert.equal(record.body, expectedBody);

    // It is on disk, not only in memory.
    await r.store.flush();
    const reopened = await LowdbStore.open({ dir: r.dir, shards: 1 });
    assert.equal((await reopened.getDelivery(queued.id))?.status, 'delivered');
    await reopened.close();
  });

  it('is accepted by stripe.webhooks.constructEvent on the raw body received', async () => {
    const r = await rig(() => ({ status: 204 }));
    const secret = 'whsec_' + 'A'.repeat(43);
    r.secrets.set(ACCOUNT, secret);
    const d = r.deliverer();
    await d.start();
    const data = conversion('cnv_stripe', 'failed');
    await d.enqueue({ conversionId: data.id, accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.failed', data });
    await waitFor(() => r.receiver.requests.length === 1, 5000, 'the delivery');
    const req = r.receiver.requests[0];
    const stripe = new Stripe('sk_test_unused');
    const event = stripe.webhooks.constructEvent(req.body, String(req.headers['x-service-signature']), secret) as unknown as {
      event: string;
      data: PublicConversion;
    };
    assert.equal(event.event, 'conversion.failed');
    assert.deepEqual(event.data, data);
    assert.throws(() => stripe.webhooks.constructEvent(req.body, String(req.headers['x-service-signature']), 'whsec_wrong'));
  });

  it('follows the whole schedule with jitter, then marks the delivery failed', async () => {
    const r = await rig(() => ({ status: 503 }));
    const scale = 0.0002;
    // random 0 = the lowest jitter (-10 %): proves the jitter is applied to the persisted plan.
    const d = r.deliverer({ scheduleScale: scale, random: () => 0 });
    await d.start();
    const data = conversion('cnv_schedule');
    const queued = await d.enqueue({ conversionId: data.id, accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data });
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'failed', 10_000, 'failed');
    await sleep(150);
    assert.equal(r.receiver.requests.length, 6);
    assert.ok(r.receiver.requests.every((req) => req.headers['x-service-delivery'] === queued.id));

    const record = await delivery(r.store, queued.id);
    assert.equal(record.attempts.length, 6);
    assert.ok(record.attempts.every((a) => a.status_code === 503 && a.error === null));
    assert.equal(record.next_attempt_at, null);
    const planned = RETRY_WAITS_MS.map((w) => Math.round(w * scale * 0.9));
    for (let i = 1; i < 6; i += 1) {
      const persistedWait = Date.parse(record.attempts[i].at) - Date.parse(record.attempts[i - 1].at);
      // Start to start: the wait, or the attempt before when it took longer, plus timer lateness.
      // (Which wait follows which attempt is pinned exactly in schedule.test.ts.)
      const due = Math.max(planned[i - 1]!, record.attempts[i - 1]!.duration_ms);
      assert.ok(
        persistedWait >= planned[i - 1]! && persistedWait < due + 500,
        `attempt ${i + 1} came ${persistedWait} ms after the previous, planned ${planned[i - 1]}`,
      );
      // On the wire, from the start of the attempt before (waits count from there): the gap between
      // two arrivals would shrink by however long the earlier TLS handshake took on a loaded machine.
      const sincePreviousStart = performance.timeOrigin + r.receiver.requests[i].atMs - Date.parse(record.attempts[i - 1].at);
      assert.ok(
        sincePreviousStart >= planned[i - 1] - 2 && sincePreviousStart < planned[i - 1] + 3000,
        `request ${i + 1} arrived ${sincePreviousStart} ms after attempt ${i} started, planned ${planned[i - 1]}`,
      );
    }
  });

  it('signs each attempt with the account secret current at that attempt (rotation)', async () => {
    let r: Rig;
    r = await rig((_req, i) => {
      if (i === 0) r.secrets.set(ACCOUNT, 'whsec_rotated'); // rotated between attempt 1 and 2
      return { status: i === 0 ? 500 : 200 };
    });
    const d = r.deliverer();
    await d.start();
    const data = conversion('cnv_rotation');
    const queued = await d.enqueue({ conversionId: data.id, accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data });
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'delivered', 5000, 'delivered');
    const [first, second] = r.receiver.requests.map((req) => ({ body: req.body, sig: String(req.headers['x-service-signature']) }));
    assert.equal(verifyWebhook(first.body, first.sig, 'whsec_first').ok, true);
    assert.equal(verifyWebhook(second.body, second.sig, 'whsec_rotated').ok, true);
    assert.deepEqual(verifyWebhook(second.body, second.sig, 'whsec_first'), { ok: false, reason: 'bad_signature' });
  });

  it('counts a time-out and a redirect as failed attempts and follows no redirect', async () => {
    const r = await rig((req, i) => {
      if (req.path === '/slow') return i === 0 ? 'hang' : { status: 200 };
      return req.path === '/moved' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 };
    });
    const d = r.deliverer({ timeoutMs: 300 });
    await d.start();
    const slow = await d.enqueue({ conversionId: 'cnv_slow', accountId: ACCOUNT, url: r.receiver.url('/slow'), event: 'conversion.succeeded', data: conversion('cnv_slow') });
    const moved = await d.enqueue({ conversionId: 'cnv_moved', accountId: ACCOUNT, url: r.receiver.url('/moved'), event: 'conversion.succeeded', data: conversion('cnv_moved') });
    await waitFor(async () => (await delivery(r.store, slow.id)).status === 'delivered', 5000, 'slow delivered');
    await waitFor(async () => (await delivery(r.store, moved.id)).attempts.length >= 2, 5000, 'second redirect attempt');

    const slowRecord = await delivery(r.store, slow.id);
    assert.equal(slowRecord.attempts[0].status_code, null);
    assert.equal(slowRecord.attempts[0].error, 'timeout');
    assert.ok(slowRecord.attempts[0].duration_ms >= 290, `timed out after ${slowRecord.attempts[0].duration_ms} ms`);
    assert.equal(slowRecord.attempts[1].status_code, 200);

    const movedRecord = await delivery(r.store, moved.id);
    assert.equal(movedRecord.status, 'pending');
    assert.deepEqual(movedRecord.attempts.slice(0, 2).map((a) => a.status_code), [302, 302]);
    assert.ok(!r.receiver.requests.some((req) => req.path === '/elsewhere'), 'the redirect was followed');
  });

  it('records a connection error and schedules the next attempt', async () => {
    const r = await rig(() => ({ status: 200 }));
    const closed = await startReceiver({ tls: true, respond: () => ({ status: 200 }) });
    const url = closed.url();
    await closed.close(); // nothing listens on that port any more
    const d = r.deliverer({ scheduleScale: 1 }); // real waits: the second attempt is a minute away
    await d.start();
    const queued = await d.enqueue({ conversionId: 'cnv_refused', accountId: ACCOUNT, url, event: 'conversion.succeeded', data: conversion('cnv_refused') });
    await waitFor(async () => (await delivery(r.store, queued.id)).attempts.length === 1, 5000, 'first attempt');
    const record = await delivery(r.store, queued.id);
    assert.equal(record.status, 'pending');
    assert.match(record.attempts[0].error ?? '', /ECONNREFUSED/);
    const wait = Date.parse(record.next_attempt_at ?? '') - Date.parse(record.attempts[0].at);
    assert.equal(wait, 60_000);
  });
});

describe('WebhookDeliverer: secrets', () => {
  it('treats a missing account secret as a failed attempt (retried), sending nothing unsigned', async () => {
    const r = await rig(() => ({ status: 200 }));
    const d = r.deliverer({ scheduleScale: 1 });
    await d.start();
    const queued = await d.enqueue({ conversionId: 'cnv_nosecret', accountId: 'acc_gone', url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_nosecret') });
    await waitFor(async () => (await delivery(r.store, queued.id)).attempts.length === 1, 5000, 'first attempt');
    const record = await delivery(r.store, queued.id);
    assert.equal(record.status, 'pending');
    assert.match(record.attempts[0].error ?? '', /^no webhook secret: no account acc_gone/);
    assert.ok(record.next_attempt_at);
    assert.equal(r.receiver.connections(), 0);
  });
});

describe('WebhookDeliverer: https only and the SSRF guard', () => {
  it('refuses an http callback unless allowInsecure, without connecting', async () => {
    const r = await rig(() => ({ status: 200 }), false);
    const strict = r.deliverer({ allowInsecure: false });
    await strict.start();
    const refused = await strict.enqueue({ conversionId: 'cnv_http', accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_http') });
    await waitFor(async () => (await delivery(r.store, refused.id)).status === 'failed', 5000, 'failed');
    const record = await delivery(r.store, refused.id);
    assert.equal(record.attempts.length, 1, 'a scheme error is permanent: no retries');
    assert.match(record.attempts[0].error ?? '', /^https_required/);
    assert.equal(r.receiver.connections(), 0);
    await strict.stop();

    const insecure = r.deliverer({ allowInsecure: true });
    await insecure.start();
    const allowed = await insecure.enqueue({ conversionId: 'cnv_http_ok', accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_http_ok') });
    await waitFor(async () => (await delivery(r.store, allowed.id)).status === 'delivered', 5000, 'delivered over http');
    assert.equal(r.receiver.requests.length, 1);
  });

  it('refuses loopback addresses (literal, by name, IPv4-mapped) unless allowInsecure', async () => {
    const r = await rig(() => ({ status: 200 }));
    const strict = r.deliverer({ allowInsecure: false, scheduleScale: 0.00005 });
    await strict.start();
    const urls = [
      r.receiver.url('/hook', '127.0.0.1'),
      r.receiver.url('/hook', 'localhost'),
      r.receiver.url('/hook', '[::ffff:127.0.0.1]'),
      r.receiver.url('/hook', '2130706433'), // 127.0.0.1 as one decimal number
    ];
    const ids: string[] = [];
    for (const [i, url] of urls.entries()) {
      const id = `cnv_ssrf_${i}`;
      ids.push((await strict.enqueue({ conversionId: id, accountId: ACCOUNT, url, event: 'conversion.succeeded', data: conversion(id) })).id);
    }
    for (const id of ids) {
      await waitFor(async () => (await delivery(r.store, id)).status === 'failed', 5000, `delivery ${id} failed`);
      const record = await delivery(r.store, id);
      assert.equal(record.attempts.length, 6, 'a blocked address is retried like a connection error');
      for (const attempt of record.attempts) {
        assert.equal(attempt.status_code, null);
        assert.match(attempt.error ?? '', /blocked: .*loopback/);
      }
    }
    assert.equal(r.receiver.connections(), 0, 'a blocked address must not even be connected to');
    await strict.stop();

    // Control: the same receiver is reachable with the test flag, so the guard is what refused.
    const insecure = r.deliverer({ allowInsecure: true });
    await insecure.start();
    const ok = await insecure.enqueue({ conversionId: 'cnv_loopback_ok', accountId: ACCOUNT, url: urls[1], event: 'conversion.succeeded', data: conversion('cnv_loopback_ok') });
    await waitFor(async () => (await delivery(r.store, ok.id)).status === 'delivered', 5000, 'delivered with the flag');
  });
});

describe('WebhookDeliverer: persistence, restart, redelivery, stop', () => {
  it('resumes a pending delivery from the store at its next attempt time, and never resends a delivered one', async () => {
    let fail = true;
    const r = await rig(() => ({ status: fail ? 500 : 200 }));
    const first = r.deliverer({ scheduleScale: 0.01 }); // second attempt 600 ms after the first
    await first.start();
    const queued = await first.enqueue({ conversionId: 'cnv_restart', accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_restart') });
    await waitFor(async () => (await delivery(r.store, queued.id)).attempts.length === 1, 5000, 'first attempt');
    await first.stop();
    await r.store.close();
    fail = false;

    // A new process: a new store on the same files, a new deliverer.
    r.store = await LowdbStore.open({ dir: r.dir, shards: 1 });
    const pending = await delivery(r.store, queued.id);
    assert.equal(pending.status, 'pending');
    const second = r.deliverer({ scheduleScale: 0.01 });
    await second.start();
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'delivered', 5000, 'delivered after restart');
    const record = await delivery(r.store, queued.id);
    assert.ok(Date.parse(record.attempts[1].at) >= Date.parse(pending.next_attempt_at ?? ''), 'resumed before its time');
    assert.deepEqual(r.receiver.requests.map((req) => req.headers['x-service-delivery']), [queued.id, queued.id]);
    await second.stop();
    await r.store.close();

    r.store = await LowdbStore.open({ dir: r.dir, shards: 1 });
    const third = r.deliverer({ scheduleScale: 0.01 });
    await third.start();
    await sleep(300);
    assert.equal(r.receiver.requests.length, 2, 'a delivered webhook was sent again');
  });

  it('only persists before start(), sends on start(), and enqueues once per conversion and event', async () => {
    const r = await rig(() => ({ status: 200 }));
    const d = r.deliverer();
    const data = conversion('cnv_before_start');
    const input = { conversionId: data.id, accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded' as const, data };
    const queued = await d.enqueue(input);
    await sleep(100);
    assert.equal(r.receiver.requests.length, 0);
    assert.equal((await delivery(r.store, queued.id)).status, 'pending');
    await d.start();
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'delivered', 5000, 'delivered on start');
    const again = await d.enqueue(input);
    assert.equal(again.id, queued.id);
    // Concurrent duplicates too (a new conversion, both calls racing).
    const racing = { ...input, conversionId: 'cnv_racing', data: conversion('cnv_racing') };
    const [a, b] = await Promise.all([d.enqueue(racing), d.enqueue(racing)]);
    assert.equal(a.id, b.id);
    await waitFor(async () => (await delivery(r.store, a.id)).status === 'delivered', 5000, 'racing delivered');
    await sleep(100);
    assert.equal(r.receiver.requests.length, 2);
    assert.equal((await r.store.listDeliveries({ conversionId: data.id })).length, 1);
    assert.equal((await r.store.listDeliveries({ conversionId: 'cnv_racing' })).length, 1);
  });

  it('redelivers on request with the same id, and returns undefined for an unknown id', async () => {
    const r = await rig(() => ({ status: 200 }));
    const d = r.deliverer();
    await d.start();
    const queued = await d.enqueue({ conversionId: 'cnv_redeliver', accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_redeliver') });
    await waitFor(async () => (await delivery(r.store, queued.id)).status === 'delivered', 5000, 'delivered');
    const updated = await d.redeliver(queued.id);
    assert.equal(updated?.status, 'delivered');
    assert.equal(updated?.attempts.length, 2);
    assert.equal(r.receiver.requests.length, 2);
    assert.equal(r.receiver.requests[1].headers['x-service-delivery'], queued.id);
    assert.deepEqual(r.receiver.requests[1].body, r.receiver.requests[0].body);
    assert.equal(await d.redeliver('00000000-0000-4000-8000-000000000000'), undefined);
  });

  it('stop() waits for an attempt in flight and persists its outcome', async () => {
    const r = await rig(() => ({ status: 200, delayMs: 200 }));
    const d = r.deliverer();
    await d.start();
    const queued = await d.enqueue({ conversionId: 'cnv_stop', accountId: ACCOUNT, url: r.receiver.url(), event: 'conversion.succeeded', data: conversion('cnv_stop') });
    await waitFor(() => r.receiver.requests.length === 1, 5000, 'the request');
    await d.stop();
    assert.equal((await delivery(r.store, queued.id)).status, 'delivered');
  });
});
