import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import Stripe from 'stripe';
import { generateWebhookSecret, signWebhook, verifyWebhook } from '../../src/webhooks/index.ts';

const SECRET = 'whsec_test_secret_for_signatures';
const BODY = '{"event":"conversion.succeeded","data":{"id":"cnv_1","original_name":"Grüße ✓.png"}}';
const T = 1_700_000_000;

/** The spec's rule, computed here independently of the code under test. */
function independentHmac(secret: string, t: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)])).digest('hex');
}

describe('signWebhook', () => {
  it('produces t=<unix>,v1=<lowercase hex HMAC-SHA256 of "<t>.<body>">', () => {
    const header = signWebhook(BODY, SECRET, T);
    assert.equal(header, `t=${T},v1=${independentHmac(SECRET, T, BODY)}`);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('signs the UTF-8 bytes: a string and its Buffer give the same signature', () => {
    assert.equal(signWebhook(BODY, SECRET, T), signWebhook(Buffer.from(BODY, 'utf8'), SECRET, T));
  });

  it('refuses an empty secret and a non-integer timestamp', () => {
    assert.throws(() => signWebhook(BODY, '', T), TypeError);
    assert.throws(() => signWebhook(BODY, SECRET, 1.5), TypeError);
  });
});

describe('verifyWebhook', () => {
  const header = `t=${T},v1=${independentHmac(SECRET, T, BODY)}`;

  it('accepts an authentic delivery (string or Buffer body) and returns its timestamp', () => {
    assert.deepEqual(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 10 }), { ok: true, timestamp: T });
    assert.deepEqual(verifyWebhook(Buffer.from(BODY), header, SECRET, { nowSeconds: T }), { ok: true, timestamp: T });
  });

  it('rejects a changed body, a wrong secret and a changed timestamp', () => {
    const now = { nowSeconds: T };
    assert.deepEqual(verifyWebhook(BODY.replace('cnv_1', 'cnv_2'), header, SECRET, now), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(verifyWebhook(BODY + ' ', header, SECRET, now), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(verifyWebhook(BODY, header, 'whsec_other', now), { ok: false, reason: 'bad_signature' });
    const moved = header.replace(`t=${T}`, `t=${T + 1}`);
    assert.deepEqual(verifyWebhook(BODY, moved, SECRET, { nowSeconds: T }), { ok: false, reason: 'bad_signature' });
  });

  it('accepts a header with several v1 values when any one matches (secret rotation)', () => {
    const old = independentHmac('whsec_old', T, BODY);
    const current = independentHmac(SECRET, T, BODY);
    const both = `t=${T},v1=${old},v1=${current}`;
    assert.equal(verifyWebhook(BODY, both, SECRET, { nowSeconds: T }).ok, true);
    assert.equal(verifyWebhook(BODY, both, 'whsec_old', { nowSeconds: T }).ok, true);
    assert.deepEqual(verifyWebhook(BODY, both, 'whsec_third', { nowSeconds: T }), { ok: false, reason: 'bad_signature' });
  });

  it('ignores unknown schemes and tolerates spaces around items', () => {
    const current = independentHmac(SECRET, T, BODY);
    const fake = 'f'.repeat(64);
    assert.equal(verifyWebhook(BODY, `v0=${fake}, t=${T}, v2=${current}x, v1=${current}`, SECRET, { nowSeconds: T }).ok, true);
    // A correct HMAC under an unknown scheme name does not count as a v1 signature.
    assert.deepEqual(verifyWebhook(BODY, `t=${T},v0=${current}`, SECRET, { nowSeconds: T }), { ok: false, reason: 'malformed_header' });
  });

  it('rejects replays: a timestamp 300 s or more old, and one 300 s or more in the future', () => {
    // "accepts a difference of less than 300 seconds" (spec 6).
    assert.equal(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 299 }).ok, true);
    assert.deepEqual(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 300 }), { ok: false, reason: 'stale_timestamp' });
    assert.deepEqual(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 86_400 }), { ok: false, reason: 'stale_timestamp' });
    assert.equal(verifyWebhook(BODY, header, SECRET, { nowSeconds: T - 299 }).ok, true);
    assert.deepEqual(verifyWebhook(BODY, header, SECRET, { nowSeconds: T - 300 }), { ok: false, reason: 'future_timestamp' });
  });

  it('honours toleranceSeconds and defaults to the system clock', () => {
    assert.deepEqual(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 61, toleranceSeconds: 60 }), { ok: false, reason: 'stale_timestamp' });
    assert.equal(verifyWebhook(BODY, header, SECRET, { nowSeconds: T + 3599, toleranceSeconds: 3600 }).ok, true);
    // T is in 2023: without nowSeconds the real clock makes it stale.
    assert.deepEqual(verifyWebhook(BODY, header, SECRET), { ok: false, reason: 'stale_timestamp' });
    const fresh = signWebhook(BODY, SECRET, Math.floor(Date.now() / 1000));
    assert.equal(verifyWebhook(BODY, fresh, SECRET).ok, true);
  });

  it('checks the signature before the timestamp: a forged old delivery is a bad signature', () => {
    const forged = `t=${T},v1=${'0'.repeat(64)}`;
    assert.deepEqual(verifyWebhook(BODY, forged, SECRET, { nowSeconds: T + 10_000 }), { ok: false, reason: 'bad_signature' });
  });

  it('calls a header malformed when it has no usable t or no well-formed v1', () => {
    const v1 = independentHmac(SECRET, T, BODY);
    const malformed = [
      undefined,
      null,
      '',
      'garbage',
      `v1=${v1}`, // no t
      `t=,v1=${v1}`,
      `t=abc,v1=${v1}`,
      `t=-5,v1=${v1}`,
      `t=1.5,v1=${v1}`,
      `t=${T},t=${T},v1=${v1}`, // two timestamps: which one was signed is ambiguous
      `t=${T}`, // no v1
      `t=${T},v1=`,
      `t=${T},v1=${v1.slice(0, 63)}`, // not 64 hex digits
      `t=${T},v1=${'z'.repeat(64)}`,
    ];
    for (const bad of malformed) {
      assert.deepEqual(verifyWebhook(BODY, bad, SECRET, { nowSeconds: T }), { ok: false, reason: 'malformed_header' }, String(bad));
    }
  });

  it('throws on programming errors: an empty secret or a non-positive tolerance', () => {
    assert.throws(() => verifyWebhook(BODY, header, ''), TypeError);
    assert.throws(() => verifyWebhook(BODY, header, SECRET, { toleranceSeconds: 0 }), TypeError);
    assert.throws(() => verifyWebhook(BODY, header, SECRET, { toleranceSeconds: Number.NaN }), TypeError);
  });
});

describe('generateWebhookSecret', () => {
  it('returns whsec_ + 32 random bytes in base64url', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    assert.match(a, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(a.slice('whsec_'.length), 'base64url').length, 32);
    assert.notEqual(a, b);
  });
});

describe('compatibility with the stripe package (same t=…,v1=… scheme)', () => {
  const stripe = new Stripe('sk_test_unused');

  it('stripe.webhooks.constructEvent accepts our signature and rejects a tampered body', () => {
    const secret = generateWebhookSecret();
    const header = signWebhook(BODY, secret, Math.floor(Date.now() / 1000));
    const event = stripe.webhooks.constructEvent(BODY, header, secret) as unknown as { event: string };
    assert.equal(event.event, 'conversion.succeeded');
    assert.throws(() => stripe.webhooks.constructEvent(BODY.replace('cnv_1', 'cnv_9'), header, secret));
  });

  it('our verifier accepts stripe\'s own test header', () => {
    const secret = generateWebhookSecret();
    const header = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret });
    assert.equal(verifyWebhook(BODY, header, secret).ok, true);
  });
});
