/**
 * Webhooks end to end through the real daemon: a spawned convd
 * converts real images and delivers to a real receiver on 127.0.0.1 (HTTPS with a self-signed
 * certificate the daemon trusts through NODE_EXTRA_CA_CERTS, or plain http under the test flag).
 * Signatures are checked with an HMAC computed here with node:crypto, with our verifier and with
 * stripe's. The 91-minute retry schedule is shrunk by CONVD_WEBHOOK_SCHEDULE_SCALE, never slept.
 * One suite, two stores: under CONVD_TEST_STORE=postgres (`npm run test:postgres`) every daemon
 * keeps its state in a PostgreSQL database of its own and its files in an S3 bucket
 * (test/helpers/daemon.ts), with the same assertions; across the crash the admin tool is named
 * that database while no daemon runs, and the restarts run on the same database and bucket.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import Stripe from 'stripe';
import { verifyWebhook } from '../../src/webhooks/index.ts';
import { RETRY_WAITS_MS, JITTER_FRACTION } from '../../src/webhooks/schedule.ts';
import { api, convdAdmin, startDaemon, TEST_STORE, type DaemonHandle } from '../helpers/daemon.ts';
import { type ReceivedRequest, type Receiver, selfSignedCertificate, sleep, startReceiver, waitFor } from '../helpers/webhooks-receiver.ts';

/** The whole 91-minute schedule in ~2.7 s (±10 % jitter). */
const SCALE = 0.0005;
const SCHEDULE_MS = RETRY_WAITS_MS.reduce((a, b) => a + b, 0) * SCALE * (1 + JITTER_FRACTION);
/**
 * On PostgreSQL + S3 (CONVD_TEST_STORE=postgres) a restarted daemon is a new node: the retry its
 * killed predecessor had scheduled stays that node's claim until lease_timeout after it is due,
 * and is then sent by whichever node looks next (every lease_timeout). 6 s instead of the default
 * 30 keeps that wait short while leaving a loaded machine seconds to renew a live claim. lowdb
 * has no claims: one daemon per data dir.
 */
const LEASE_ARGS = TEST_STORE === 'postgres' ? ['--lease-timeout', '6s'] : [];
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SIGNATURE = /^t=(\d+),v1=([0-9a-f]{64})$/;

/** The delivery as `convd deliveries list --json` prints it. */
interface DeliveryJson {
  id: string;
  conversion_id: string;
  event: string;
  url: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: { at: string; status_code: number | null; error: string | null; duration_ms: number }[];
  next_attempt_at: string | null;
  created_at: string;
}

interface Webhook {
  event: string;
  data: Record<string, unknown> & { id: string; status: string };
}

let workDir: string;
let caFile: string;

/** Answers by path: each path has its own list of statuses, used in order, then 200. */
class Routes {
  private readonly plans = new Map<string, number[]>();
  private readonly served = new Map<string, number>();
  /** What each request was answered, in arrival order. */
  readonly answers: { path: string; status: number }[] = [];

  plan(path: string, statuses: number[]): string {
    this.plans.set(path, statuses);
    return path;
  }

  respond = (request: ReceivedRequest): { status: number } => {
    const n = this.served.get(request.path) ?? 0;
    this.served.set(request.path, n + 1);
    const status = this.plans.get(request.path)?.[n] ?? 200;
    this.answers.push({ path: request.path, status });
    return { status };
  };
}

function at(receiver: Receiver, path: string): ReceivedRequest[] {
  return receiver.requests.filter((request) => request.path === path);
}

async function png(color: string): Promise<Buffer> {
  return sharp({ create: { width: 16, height: 12, channels: 3, background: color } }).png().toBuffer();
}

/** A PNG whose signature and header are real (so it is taken for a PNG) but whose data is not. */
async function corruptPng(): Promise<Buffer> {
  const real = await png('#00f');
  return Buffer.concat([real.subarray(0, 33), Buffer.alloc(200, 0x5a)]);
}

/** POST /v1/conversions as multipart, the way a browser or curl -F would send it. */
async function submit(daemon: DaemonHandle, file: Buffer, name: string, callbackUrl: string) {
  const form = new FormData();
  form.set('target', 'webp');
  form.set('callback_url', callbackUrl);
  form.set('file', new Blob([new Uint8Array(file)], { type: 'image/png' }), name);
  return api(daemon, '/conversions', { method: 'POST', body: form });
}

async function secretOf(daemon: DaemonHandle, rotate = false): Promise<string> {
  const args = ['webhook-secret', '--account', daemon.accountId, '--json', ...(rotate ? ['--rotate'] : [])];
  const out = await convdAdmin(daemon.dataDir, args);
  assert.equal(out.code, 0, out.stderr);
  const json = out.json as { account: string; secret: string };
  assert.equal(json.account, daemon.accountId);
  return json.secret;
}

/**
 * `convd deliveries list --json`: through the running daemon's admin socket (its data dir), or,
 * `offline` (no daemon runs), on its store itself: the data dir's files on lowdb, the database on
 * PostgreSQL (`--database-url`: the data dir holds no state there).
 */
async function deliveries(daemon: DaemonHandle, conversionId?: string, { offline = false } = {}): Promise<DeliveryJson[]> {
  const args = ['deliveries', 'list', '--json', ...(conversionId ? ['--conversion', conversionId] : []), ...(offline ? daemon.storeArgs : [])];
  const out = await convdAdmin(daemon.dataDir, args);
  assert.equal(out.code, 0, out.stderr);
  return out.json as DeliveryJson[];
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  assert.equal(typeof value, 'string', `header ${name}`);
  return value as string;
}

/**
 * The receiver's side, computed here from the raw bytes with node:crypto only (not with the code
 * under test): `v1` = hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret, and a fresh `t`.
 */
function assertSignedWith(request: ReceivedRequest, secret: string): number {
  const match = SIGNATURE.exec(header(request.headers, 'x-service-signature'));
  assert.ok(match, `signature header shape: ${request.headers['x-service-signature']}`);
  const [, t, v1] = match;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(request.body).digest('hex');
  assert.equal(v1, expected, 'v1 is the HMAC of "<t>.<raw body>"');
  const skew = Math.abs(Number(t) - Date.now() / 1000);
  assert.ok(skew < 30, `t is the time of sending (off by ${skew} s)`);
  return Number(t);
}

function isSignedWith(request: ReceivedRequest, secret: string): boolean {
  const match = SIGNATURE.exec(String(request.headers['x-service-signature']));
  if (!match) return false;
  return createHmac('sha256', secret).update(`${match[1]}.`).update(request.body).digest('hex') === match[2];
}

/** The envelope, with the checks every delivery must pass (headers, content type, event). */
function assertDelivery(request: ReceivedRequest, event: string): Webhook {
  assert.equal(request.method, 'POST');
  assert.match(header(request.headers, 'content-type'), /^application\/json\b/);
  assert.equal(header(request.headers, 'x-service-event'), event);
  assert.match(header(request.headers, 'x-service-delivery'), UUID_V4);
  assert.equal(Number(request.headers['content-length']), request.body.length);
  const body = JSON.parse(request.body.toString('utf8')) as Webhook;
  assert.deepEqual(Object.keys(body).sort(), ['data', 'event']);
  assert.equal(body.event, event);
  return body;
}

// The three groups use their own daemons and receivers and mostly wait on timers: they run side by
// side, the tests inside each group one after another (`concurrency` is inherited otherwise).
describe('webhooks through the real daemon', { concurrency: true }, () => {
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'convd-webhooks-daemon-'));
    // The receiver serves this certificate; the daemon trusts it through Node's NODE_EXTRA_CA_CERTS
    // (applied to every TLS context that does not set its own `ca`, got's agent included).
    caFile = join(workDir, 'receiver-ca.pem');
    await writeFile(caFile, selfSignedCertificate().cert);
  });

  after(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  describe('webhooks from the daemon, with --allow-insecure-callbacks (loopback receiver)', { concurrency: 1 }, () => {
    const routes = new Routes();
    let receiver: Receiver;
    let daemon: DaemonHandle;

    before(async () => {
      receiver = await startReceiver({ tls: true, respond: routes.respond });
      daemon = await startDaemon({
        args: ['--allow-insecure-callbacks'],
        env: { NODE_EXTRA_CA_CERTS: caFile, CONVD_WEBHOOK_SCHEDULE_SCALE: String(SCALE) },
      });
    });

    after(async () => {
      await daemon?.dispose();
      await receiver?.close();
    });

    it('logs the insecure flag loudly at start-up', () => {
      assert.match(daemon.stderr(), /"event":"warning".*INSECURE: http and private callback URLs are allowed/);
    });

    it('delivers conversion.succeeded over https, signed, with the conversion exactly as GET returns it', async () => {
      const path = routes.plan('/succeeded', []);
      const secret = await secretOf(daemon);
      assert.match(secret, /^whsec_/);
      // A non-ASCII name: the bytes signed must be the UTF-8 bytes sent.
      const created = await submit(daemon, await png('#f00'), 'Grüße ✓.png', receiver.url(path));
      assert.equal(created.status, 202, JSON.stringify(created.body));

      await waitFor(() => at(receiver, path).length === 1, 15_000, 'the delivery');
      const [request] = at(receiver, path);
      const body = assertDelivery(request!, 'conversion.succeeded');
      assertSignedWith(request!, secret);
      assert.equal(verifyWebhook(request!.body, String(request!.headers['x-service-signature']), secret).ok, true);

      const current = await api(daemon, `/conversions/${created.body.id}`);
      assert.equal(current.status, 200);
      assert.deepEqual(body.data, current.body);
      assert.equal(body.data.status, 'succeeded');
      assert.equal(body.data.original_name, 'Grüße ✓.png');

      // The result named in the webhook is a real WebP.
      const download = await fetch(`${daemon.baseUrl}/conversions/${created.body.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
      const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
      assert.equal(meta.format, 'webp');
      assert.deepEqual([meta.width, meta.height], [16, 12]);

      // Exactly one attempt, recorded as delivered.
      const [delivery] = await deliveries(daemon, created.body.id);
      assert.equal(delivery!.id, request!.headers['x-service-delivery']);
      assert.equal(delivery!.status, 'delivered');
      assert.deepEqual(delivery!.attempts.map((a) => a.status_code), [200]);
      assert.equal(delivery!.next_attempt_at, null);
    });

    it('delivers conversion.failed for a corrupt PNG, and no other event', async () => {
      const path = routes.plan('/failed', []);
      const secret = await secretOf(daemon);
      const created = await submit(daemon, await corruptPng(), 'broken.png', receiver.url(path));
      assert.equal(created.status, 202, JSON.stringify(created.body));

      await waitFor(() => at(receiver, path).length === 1, 15_000, 'the failure delivery');
      const [request] = at(receiver, path);
      const body = assertDelivery(request!, 'conversion.failed');
      assertSignedWith(request!, secret);
      const current = await api(daemon, `/conversions/${created.body.id}`);
      assert.deepEqual(body.data, current.body);
      assert.equal(body.data.status, 'failed');
      assert.equal(body.data.credits, 0);
      assert.equal(body.data.result, null);
      assert.equal((body.data.error as { code: string }).code, 'input_invalid');
      // queued/processing never sent anything: one request in all for this conversion.
      await sleep(200);
      assert.equal(at(receiver, path).length, 1);
    });

    it('retries a 500 with the same delivery id and body until a 2xx; deliveries list shows each attempt', async () => {
      const path = routes.plan('/flaky', [500, 503]);
      const secret = await secretOf(daemon);
      const created = await submit(daemon, await png('#0f0'), 'green.png', receiver.url(path));
      assert.equal(created.status, 202);

      await waitFor(() => at(receiver, path).length === 3, 15_000, 'three attempts');
      const requests = at(receiver, path);
      const ids = new Set(requests.map((r) => r.headers['x-service-delivery']));
      assert.equal(ids.size, 1, 'one X-Service-Delivery id for every attempt');
      for (const request of requests) {
        assertDelivery(request, 'conversion.succeeded');
        assertSignedWith(request, secret);
        assert.ok(request.body.equals(requests[0]!.body), 'the same body bytes on every attempt');
      }
      const listed = await deliveries(daemon, created.body.id);
      assert.equal(listed.length, 1);
      const delivery = listed[0]!;
      assert.equal(delivery.id, [...ids][0]);
      assert.equal(delivery.conversion_id, created.body.id);
      assert.equal(delivery.event, 'conversion.succeeded');
      assert.equal(delivery.url, receiver.url(path));
      assert.equal(delivery.status, 'delivered');
      assert.deepEqual(delivery.attempts.map((a) => a.status_code), [500, 503, 200]);
      assert.equal(delivery.next_attempt_at, null);
      assert.equal('body' in delivery, false, 'the operator listing leaves the body out');
      // The waits follow the scaled schedule (1 min, then 5 min, -10 % jitter at most), not an
      // immediate loop. Measured between the recorded attempt starts, which is what the schedule
      // counts from (arrival times at the receiver also carry each connection's set-up time).
      const starts = delivery.attempts.map((a) => Date.parse(a.at));
      for (const [i, wait] of RETRY_WAITS_MS.slice(0, 2).entries()) {
        const gap = starts[i + 1]! - starts[i]!;
        assert.ok(gap >= Math.floor(wait * SCALE * (1 - JITTER_FRACTION)), `wait ${i + 1}: ${gap} ms`);
      }

      // Nothing more after the 2xx, for longer than the rest of the scaled schedule.
      await sleep(SCHEDULE_MS);
      assert.equal(at(receiver, path).length, 3);

      // The human listing names the codes too.
      const text = await convdAdmin(daemon.dataDir, ['deliveries', 'list', '--conversion', created.body.id]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`${delivery.id} .*delivered.*attempts \\[500, 503, 200\\]`));
      // And the unfiltered listing includes it beside the others.
      assert.ok((await deliveries(daemon)).some((d) => d.id === delivery.id));
    });

    it('deliveries redeliver resends the same delivery (same id and bytes, freshly signed)', async () => {
      const path = routes.plan('/redeliver', []);
      const secret = await secretOf(daemon);
      const created = await submit(daemon, await png('#ff0'), 'yellow.png', receiver.url(path));
      await waitFor(() => at(receiver, path).length === 1, 15_000, 'the first delivery');
      const [first] = at(receiver, path);
      const id = String(first!.headers['x-service-delivery']);

      const out = await convdAdmin(daemon.dataDir, ['deliveries', 'redeliver', id, '--json']);
      assert.equal(out.code, 0, out.stderr);
      const updated = out.json as DeliveryJson;
      assert.equal(updated.id, id);
      assert.equal(updated.status, 'delivered');
      assert.deepEqual(updated.attempts.map((a) => a.status_code), [200, 200]);

      assert.equal(at(receiver, path).length, 2);
      const second = at(receiver, path)[1]!;
      assertDelivery(second, 'conversion.succeeded');
      assert.equal(second.headers['x-service-delivery'], id);
      assert.ok(second.body.equals(first!.body));
      assertSignedWith(second, secret);

      const [listed] = await deliveries(daemon, created.body.id);
      assert.deepEqual(listed!.attempts.map((a) => a.status_code), [200, 200]);

      const unknown = await convdAdmin(daemon.dataDir, ['deliveries', 'redeliver', '00000000-0000-4000-8000-000000000000']);
      assert.equal(unknown.code, 4);
      assert.match(unknown.stderr, /no delivery/);
    });

    it('is accepted by stripe.webhooks.constructEvent, and replays are rejected by verifyWebhook', async () => {
      const path = routes.plan('/stripe', []);
      const secret = await secretOf(daemon);
      const created = await submit(daemon, await png('#0ff'), 'cyan.png', receiver.url(path));
      await waitFor(() => at(receiver, path).length === 1, 15_000, 'the delivery');
      const [request] = at(receiver, path);
      const signature = String(request!.headers['x-service-signature']);

      const stripe = new Stripe('sk_test_unused');
      const event = stripe.webhooks.constructEvent(request!.body, signature, secret) as unknown as Webhook;
      assert.equal(event.event, 'conversion.succeeded');
      assert.equal(event.data.id, created.body.id);
      assert.throws(() => stripe.webhooks.constructEvent(request!.body, signature, `${secret}x`), /signature/i);
      assert.throws(() => stripe.webhooks.constructEvent(Buffer.concat([request!.body, Buffer.from(' ')]), signature, secret), /signature/i);

      // The same authentic delivery replayed later than the tolerance: refused.
      const t = Number(SIGNATURE.exec(signature)![1]);
      assert.deepEqual(verifyWebhook(request!.body, signature, secret, { nowSeconds: t + 299 }), { ok: true, timestamp: t });
      assert.deepEqual(verifyWebhook(request!.body, signature, secret, { nowSeconds: t + 300 }), { ok: false, reason: 'stale_timestamp' });
      assert.deepEqual(verifyWebhook(request!.body, signature, secret, { nowSeconds: t - 300 }), { ok: false, reason: 'future_timestamp' });
      assert.deepEqual(verifyWebhook(request!.body.toString().replace('cyan', 'cyaN'), signature, secret), { ok: false, reason: 'bad_signature' });
    });

    it('delivers to a plain http receiver under the test flag', async () => {
      const plain = await startReceiver({ tls: false, respond: () => ({ status: 204 }) });
      try {
        const secret = await secretOf(daemon);
        const created = await submit(daemon, await png('#fff'), 'white.png', plain.url('/plain'));
        assert.equal(created.status, 202, JSON.stringify(created.body));
        await waitFor(() => plain.requests.length === 1, 15_000, 'the http delivery');
        assertDelivery(plain.requests[0]!, 'conversion.succeeded');
        assertSignedWith(plain.requests[0]!, secret);
        const [delivery] = await deliveries(daemon, created.body.id);
        assert.deepEqual(delivery!.attempts.map((a) => a.status_code), [204]);
        assert.equal(delivery!.status, 'delivered');
      } finally {
        await plain.close();
      }
    });

    // Last in this group: it changes the account's secret.
    it('applies a rotated secret to every delivery signed after the rotation', async () => {
      const before = routes.plan('/before-rotation', []);
      const later = routes.plan('/after-rotation', []);
      const oldSecret = await secretOf(daemon);
      await submit(daemon, await png('#123'), 'one.png', receiver.url(before));
      await waitFor(() => at(receiver, before).length === 1, 15_000, 'the delivery before rotation');
      assertSignedWith(at(receiver, before)[0]!, oldSecret);

      const newSecret = await secretOf(daemon, true);
      assert.notEqual(newSecret, oldSecret);
      assert.equal(await secretOf(daemon), newSecret, 'the rotation is stored');

      await submit(daemon, await png('#456'), 'two.png', receiver.url(later));
      await waitFor(() => at(receiver, later).length === 1, 15_000, 'the delivery after rotation');
      const next = at(receiver, later)[0]!;
      assertSignedWith(next, newSecret);
      assert.equal(isSignedWith(next, oldSecret), false);
      assert.equal(verifyWebhook(next.body, String(next.headers['x-service-signature']), oldSecret).ok, false);

      // A delivery created before the rotation is signed with the new secret when sent again.
      const id = String(at(receiver, before)[0]!.headers['x-service-delivery']);
      const out = await convdAdmin(daemon.dataDir, ['deliveries', 'redeliver', id, '--json']);
      assert.equal(out.code, 0, out.stderr);
      const resent = at(receiver, before)[1]!;
      assert.ok(resent.body.equals(at(receiver, before)[0]!.body));
      assertSignedWith(resent, newSecret);
      assert.equal(isSignedWith(resent, oldSecret), false);
    });
  });

  describe('webhooks from the daemon without the test flag (the default)', { concurrency: 1 }, () => {
    let receiver: Receiver;
    let daemon: DaemonHandle;

    before(async () => {
      receiver = await startReceiver({ tls: true, respond: () => ({ status: 200 }) });
      // Trusting the receiver's certificate: TLS is not what blocks it, the address policy is.
      daemon = await startDaemon({ env: { NODE_EXTRA_CA_CERTS: caFile, CONVD_WEBHOOK_SCHEDULE_SCALE: String(SCALE) } });
    });

    after(async () => {
      await daemon?.dispose();
      await receiver?.close();
    });

    it('does not log the insecure warning', () => {
      assert.doesNotMatch(daemon.stderr(), /INSECURE/);
    });

    it('refuses an http callback_url at submission with 422 https_only', async () => {
      const before = await api(daemon, '/conversions');
      const refused = await submit(daemon, await png('#f0f'), 'magenta.png', receiver.url('/plain', '127.0.0.1').replace('https:', 'http:'));
      assert.equal(refused.status, 422);
      assert.equal(refused.body.error.code, 'validation_failed');
      assert.equal(refused.body.error.details.fields.callback_url.reason, 'https_only');
      const publicHttp = await submit(daemon, await png('#f0f'), 'magenta.png', 'http://example.com/hook');
      assert.equal(publicHttp.status, 422);
      assert.equal(publicHttp.body.error.details.fields.callback_url.reason, 'https_only');
      // Nothing was created.
      const afterwards = await api(daemon, '/conversions');
      assert.equal(afterwards.body.data.length, before.body.data.length);
    });

    it('blocks https callbacks to loopback at delivery: attempts record the block, the receiver sees nothing', async () => {
      const byIp = await submit(daemon, await png('#abc'), 'ip.png', receiver.url('/ip', '127.0.0.1'));
      const byName = await submit(daemon, await png('#def'), 'name.png', receiver.url('/name', 'localhost'));
      // https is all submission checks: the address is checked when connecting.
      assert.equal(byIp.status, 202, JSON.stringify(byIp.body));
      assert.equal(byName.status, 202, JSON.stringify(byName.body));

      // Every attempt of the whole (scaled) schedule is blocked, then the delivery fails for good.
      await waitFor(() => (daemon.stderr().match(/webhook delivery failed for good/g) ?? []).length === 2, 15_000, 'both deliveries to fail');
      for (const created of [byIp, byName]) {
        const [delivery] = await deliveries(daemon, created.body.id);
        assert.equal(delivery!.status, 'failed');
        assert.equal(delivery!.next_attempt_at, null);
        assert.equal(delivery!.attempts.length, RETRY_WAITS_MS.length + 1);
        for (const attempt of delivery!.attempts) {
          assert.equal(attempt.status_code, null);
          assert.match(attempt.error ?? '', /^blocked: 127\.0\.0\.1.* is not a public address/);
        }
      }
      assert.match((await deliveries(daemon, byName.body.id))[0]!.attempts[0]!.error ?? '', /resolved from localhost/);
      assert.equal(receiver.requests.length, 0);
      assert.equal(receiver.connections(), 0, 'not even a TCP connection reached the receiver');
    });
  });

  describe('webhooks across a daemon crash (kill -9) in the middle of the retry schedule', { concurrency: 1 }, () => {
    const routes = new Routes();
    let receiver: Receiver;
    let daemon: DaemonHandle | undefined;

    before(async () => {
      receiver = await startReceiver({ tls: true, respond: routes.respond });
    });

    after(async () => {
      await daemon?.dispose();
      await receiver?.close();
    });

    it('resumes the persisted schedule after restart and delivers exactly once after the 2xx', async () => {
      const path = routes.plan('/crash', [500, 500]);
      // Before the crash the first wait is 1.2 s (scale 0.02), long enough to kill the daemon
      // between the first and second attempt without a race; after the restart the rest of the
      // schedule runs at the fast scale, so the quiet window after the 2xx stays short.
      const first = await startDaemon({
        args: ['--allow-insecure-callbacks', ...LEASE_ARGS],
        env: { NODE_EXTRA_CA_CERTS: caFile, CONVD_WEBHOOK_SCHEDULE_SCALE: '0.02' },
      });
      daemon = first;
      const secret = await secretOf(first);
      const created = await submit(first, await png('#789'), 'crash.png', receiver.url(path));
      assert.equal(created.status, 202);

      // The log line comes after the failed attempt and its next time were flushed to the store.
      await waitFor(() => /webhook attempt failed/.test(first.stderr()), 15_000, 'the first failed attempt');
      await first.kill();
      assert.equal(first.process.signalCode, 'SIGKILL');
      assert.equal(at(receiver, path).length, 1, 'killed before the second attempt');
      const logged = /"message":"webhook attempt failed".*"next_attempt_at":"([^"]+)"/.exec(first.stderr());
      const nextAttemptMs = Date.parse(logged![1]!);

      // While no daemon runs, the admin tool reads the store itself (lowdb: the data dir's files,
      // the dead daemon's lock being stale; PostgreSQL: the database, named to it): the delivery
      // is pending, with its failed attempt and its next time.
      const [pending] = await deliveries(first, created.body.id, { offline: true });
      assert.equal(pending!.id, at(receiver, path)[0]!.headers['x-service-delivery']);
      assert.equal(pending!.status, 'pending');
      assert.deepEqual(pending!.attempts.map((a) => a.status_code), [500]);
      assert.equal(pending!.next_attempt_at, logged![1]);
      // A redelivery is sent by the daemon's delivery worker: without one, it is refused and nothing is sent.
      const offline = await convdAdmin(first.dataDir, ['deliveries', 'redeliver', pending!.id, ...first.storeArgs]);
      assert.equal(offline.code, 1, offline.stderr);
      assert.match(offline.stderr, /redelivery is sent by the running daemon, and none runs/);
      assert.equal(at(receiver, path).length, 1);

      // On the same store: the data dir, and on PostgreSQL the same database and bucket.
      const second = await startDaemon({
        args: ['--allow-insecure-callbacks', ...LEASE_ARGS],
        env: { NODE_EXTRA_CA_CERTS: caFile, CONVD_WEBHOOK_SCHEDULE_SCALE: String(SCALE) },
        dataDir: first.dataDir,
        apiKey: first.apiKey,
        accountId: first.accountId,
        stores: first.stores,
      });
      daemon = second;

      // Generous: on PostgreSQL the second attempt waits for the dead node's claim to run out (LEASE_ARGS).
      await waitFor(() => at(receiver, path).length === 3, 40_000, 'the attempts after restart');
      const requests = at(receiver, path);
      assert.equal(new Set(requests.map((r) => r.headers['x-service-delivery'])).size, 1, 'one delivery id across the crash');
      for (const request of requests) {
        assertDelivery(request, 'conversion.succeeded');
        assertSignedWith(request, secret);
      }

      // Exactly once after the 2xx: nothing more over longer than the rest of the schedule.
      await sleep(SCHEDULE_MS + 500);
      assert.deepEqual(routes.answers.filter((a) => a.path === path).map((a) => a.status), [500, 500, 200]);

      const [delivery] = await deliveries(second, created.body.id);
      assert.equal(delivery!.status, 'delivered');
      assert.deepEqual(delivery!.attempts.map((a) => a.status_code), [500, 500, 200]);
      assert.equal(delivery!.next_attempt_at, null);
      // The first attempt after the restart kept its persisted time: a restart is no reason to hurry.
      assert.ok(Date.parse(delivery!.attempts[1]!.at) >= nextAttemptMs, `${delivery!.attempts[1]!.at} vs ${logged![1]}`);

      // And a second restart (clean this time) does not send it again either.
      await second.stop();
      const third = await startDaemon({
        args: ['--allow-insecure-callbacks', ...LEASE_ARGS],
        env: { NODE_EXTRA_CA_CERTS: caFile, CONVD_WEBHOOK_SCHEDULE_SCALE: String(SCALE) },
        dataDir: first.dataDir,
        apiKey: first.apiKey,
        accountId: first.accountId,
        stores: first.stores,
      });
      daemon = third;
      await sleep(500);
      assert.equal(at(receiver, path).length, 3);
    });
  });
});
