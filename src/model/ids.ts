import { randomBytes, randomFillSync } from 'node:crypto';
import { decodeTime, encodeTime, monotonicFactory } from 'ulid';

/**
 * ulid's own PRNG asks webcrypto for one byte per character: sixteen native calls per id, which
 * measured a few percent of the main thread per conversion. The same bytes, drawn 4 KiB at a time.
 */
const randomPool = Buffer.alloc(4096);
let poolAt = randomPool.length;
function pooledRandom(): number {
  if (poolAt === randomPool.length) {
    randomFillSync(randomPool);
    poolAt = 0;
  }
  return randomPool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/** `cnv_` + a ULID: sorts by creation time (list order and cursors rely on it), random beyond that. */
export function newConversionId(now = Date.now()): string {
  return `cnv_${nextUlid(now).toLowerCase()}`;
}

export function newAccountId(): string {
  return `acc_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

export function newKeyId(): string {
  return `key_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

/** 32 random bytes: far beyond guessing, which is why a plain SHA-256 is enough to store it. */
export function newApiKey(): string {
  return `cvk_${randomBytes(32).toString('base64url')}`;
}

export function isConversionId(value: string): boolean {
  return /^cnv_[0-9a-hjkmnp-tv-z]{26}$/.test(value);
}

/** The smallest conversion id that can be created at `ms`: ids at or above it are that recent. */
export function conversionIdFloor(ms: number): string {
  return `cnv_${encodeTime(Math.max(0, Math.floor(ms)), 10).toLowerCase()}`;
}

/** Creation time (ms) encoded in a conversion id. */
export function conversionIdTime(id: string): number {
  return decodeTime(id.slice(4, 30).toUpperCase());
}
