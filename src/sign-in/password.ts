import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords of the web face, hashed with scrypt (memory-hard, in node:crypto: no dependency). The
 * parameters go into the stored string, so that stronger ones later still verify older hashes.
 * N = 2^15, r = 8: 32 MiB and about 60-100 ms per hash on libuv's thread pool (never the event
 * loop); sign-in attempts are rate-limited before any hash is computed.
 */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

/** What a password must be: long enough to resist guessing, short enough to hash cheaply. */
export const PASSWORD_LENGTH = { min: 10, max: 200 } as const;

function derive(password: string, salt: Buffer, options: { N: number; r: number; p: number }): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; Node's default ceiling (32 MiB) is exactly that, so twice it.
  const scryptOptions: ScryptOptions = { ...options, maxmem: 256 * options.N * options.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, scryptOptions, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash` (salt and hash base64). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `password` is the one `stored` was made from; a malformed `stored` is never a match. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const options = { N: Number(n), r: Number(r), p: Number(p) };
  // Parameters past these would be a store someone else wrote: refused rather than computed.
  if (![options.N, options.r, options.p].every(Number.isSafeInteger) || options.N > 2 ** 20 || options.r > 32 || options.p > 16) return false;
  const expected = Buffer.from(hash, 'base64');
  if (expected.length !== KEY_BYTES) return false;
  // Parameters scrypt itself refuses (an N that is not a power of two) are no match either.
  const key = await derive(password, Buffer.from(salt, 'base64'), options).catch(() => null);
  return key !== null && timingSafeEqual(key, expected);
}

/**
 * Spent on a sign-in for an account that does not exist or has no password, so that the answer
 * takes as long as a wrong password's and tells nothing about which accounts there are.
 */
let decoy: Promise<string> | undefined;
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoy ??= hashPassword('convd decoy password, never anyone\'s');
  await verifyPassword(password, await decoy);
  return false;
}
