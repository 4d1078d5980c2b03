import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (spec section 6): `X-Service-Signature: t=<unix seconds>,v1=<hex>` where the
 * hex is the HMAC-SHA256 of `<t>.<raw body>` keyed with the account's webhook secret. This is the
 * scheme Stripe uses, so receivers may also verify with libraries written for it.
 */

export const SIGNATURE_SCHEME = 'v1';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type VerifyFailureReason = 'malformed_header' | 'bad_signature' | 'stale_timestamp' | 'future_timestamp';

export type VerifyResult =
  | { ok: true; timestamp: number }
  | { ok: false; reason: VerifyFailureReason };

export interface VerifyOptions {
  /** Largest accepted difference between `t` and now, exclusive (the spec: "less than 300 seconds"). */
  toleranceSeconds?: number;
  /** The current time in unix seconds; defaults to the system clock. */
  nowSeconds?: number;
}

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
const UNIX_SECONDS = /^\d{1,15}$/;

function requireSecret(secret: string): void {
  // An empty key makes an HMAC anyone can compute: a configuration error, not a bad delivery.
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('webhook secret must be a non-empty string');
  }
}

function hmacHex(rawBody: string | Buffer, secret: string, timestamp: string): string {
  // Fed in two parts so a large Buffer body is never copied into a concatenated string.
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest('hex');
}

/** Returns the `X-Service-Signature` header value for a body sent at `timestampSeconds`. */
export function signWebhook(rawBody: string | Buffer, secret: string, timestampSeconds: number): string {
  requireSecret(secret);
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new TypeError('timestampSeconds must be a non-negative integer (unix seconds)');
  }
  const t = String(timestampSeconds);
  return `t=${t},${SIGNATURE_SCHEME}=${hmacHex(rawBody, secret, t)}`;
}

interface ParsedHeader {
  timestamp: string;
  signatures: Buffer[];
}

/**
 * `t=…,v1=…[,v1=…]`. Unknown schemes (v0, a future v2) are ignored so that the sender can add one
 * without breaking receivers; a `v1` that is not 64 hex digits is ignored the same way. The header
 * is malformed without exactly one well-formed `t` or without any well-formed `v1`.
 */
function parseHeader(header: string): ParsedHeader | null {
  let timestamp: string | null = null;
  let timestamps = 0;
  const signatures: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      timestamps += 1;
      timestamp = value;
    } else if (key === SIGNATURE_SCHEME && HEX_SHA256.test(value)) {
      signatures.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestamps !== 1 || timestamp === null || !UNIX_SECONDS.test(timestamp)) return null;
  if (signatures.length === 0) return null;
  return { timestamp, signatures };
}

/**
 * Checks a delivery. Returns a result rather than throwing, so callers (the CLI's
 * `conv webhook verify`, a receiver) can map each reason to their own message or status; it throws
 * only on programming errors (empty secret, bad tolerance). The signature is checked before the
 * timestamp, so a stale or future verdict is only given for an authentic delivery (a replay).
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): VerifyResult {
  requireSecret(secret);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance <= 0) {
    throw new TypeError('toleranceSeconds must be a positive number');
  }
  if (typeof signatureHeader !== 'string') return { ok: false, reason: 'malformed_header' };
  const parsed = parseHeader(signatureHeader);
  if (parsed === null) return { ok: false, reason: 'malformed_header' };

  const expected = Buffer.from(hmacHex(rawBody, secret, parsed.timestamp), 'hex');
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Every candidate is compared (no early exit) so timing says nothing about which one matched.
    // Lengths are equal by construction (64 hex digits -> 32 bytes), as timingSafeEqual requires.
    if (timingSafeEqual(candidate, expected)) matched = true;
  }
  if (!matched) return { ok: false, reason: 'bad_signature' };

  const timestamp = Number(parsed.timestamp);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const age = now - timestamp;
  if (age >= tolerance) return { ok: false, reason: 'stale_timestamp' };
  if (-age >= tolerance) return { ok: false, reason: 'future_timestamp' };
  return { ok: true, timestamp };
}

/** A new account secret: `whsec_` + 32 random bytes, base64url. The whole string is the HMAC key. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}
