import type { FailureBuckets } from '../../src/service/failure-buckets.ts';
import { addressKey, AuthFailureLimiter } from '../http/auth-failures.ts';

/** Failed sign-ins allowed per minute: per account name (guessing one password) and per address (trying many). */
export const SIGN_IN_FAILURES_PER_MINUTE = { name: 5, address: 20 } as const;

/** Longer names match no account: their bucket need not keep more (a key in a btree index has a size limit). */
const NAME_KEY_LENGTH = 200;
/** The typed name's bucket: trimmed and case-folded, so "Erin" and "erin " are guessed at together. */
const nameKey = (name: string) => name.trim().toLowerCase().slice(0, NAME_KEY_LENGTH);

/**
 * The sign-in limit: an attempt is taken from the address's bucket and the typed name's before the
 * password is checked, and both are given back when it was right, so only failures count. On one
 * node the buckets are in its memory (bounded, IPv6 per /64); on several they are the database's,
 * so guesses spread over the nodes are counted together.
 */
export class SignInFailures {
  private readonly addresses: FailureBuckets;
  private readonly names: FailureBuckets;

  constructor(shared?: FailureBuckets) {
    this.addresses = shared ? prefixed(shared, 'signin-address:', addressKey) : new AuthFailureLimiter();
    this.names = shared ? prefixed(shared, 'signin-name:', nameKey) : new AuthFailureLimiter(undefined, undefined, nameKey);
  }

  /** Null when this attempt may be made, else the seconds to wait (nothing stays taken then). */
  async take(address: string, name: string): Promise<number | null> {
    const waitAddress = await this.addresses.take(address, SIGN_IN_FAILURES_PER_MINUTE.address);
    if (waitAddress !== null) return waitAddress;
    const waitName = await this.names.take(name, SIGN_IN_FAILURES_PER_MINUTE.name);
    if (waitName !== null) await this.addresses.giveBack(address, SIGN_IN_FAILURES_PER_MINUTE.address);
    return waitName;
  }

  /** The attempt taken for this address and name was right. */
  async succeeded(address: string, name: string): Promise<void> {
    await this.addresses.giveBack(address, SIGN_IN_FAILURES_PER_MINUTE.address);
    await this.names.giveBack(name, SIGN_IN_FAILURES_PER_MINUTE.name);
  }
}

/** The shared buckets under keys of their own kind. */
function prefixed(buckets: FailureBuckets, prefix: string, keyOf: (key: string) => string): FailureBuckets {
  return {
    take: (key, perMinute) => buckets.take(prefix + keyOf(key), perMinute),
    giveBack: (key, perMinute) => buckets.giveBack(prefix + keyOf(key), perMinute),
  };
}
