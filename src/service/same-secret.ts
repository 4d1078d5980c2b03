import { timingSafeEqual } from 'node:crypto';

/**
 * Whether `given` is `wanted`, compared in constant time (a token from a request against the one
 * kept: a form's CSRF token, the metrics token). Only the length can be learnt from the time.
 */
export function sameSecret(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return a.length === b.length && timingSafeEqual(a, b);
}
