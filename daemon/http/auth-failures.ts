import type { FailureBuckets } from '../../src/service/failure-buckets.ts';

interface Allowance {
  /** Failures still allowed now; refilled evenly, `perMinute` a minute, up to `perMinute`. */
  attempts: number;
  updatedAt: number;
}

/** Addresses tracked at most: past this the one idle longest is forgotten (a few MB at worst). */
const DEFAULT_CAPACITY = 10_000;

/**
 * Failed authentications per client address, as a token bucket of `perMinute` attempts refilled
 * over a minute. An attempt is taken before the key is looked up and given back when the key was
 * good, so only failures stay counted, and no more than the allowance can be failing at once.
 * `perMinute` is passed at each call, so a reload applies at once; 0 switches the limit off.
 *
 * Memory stays bounded whatever the flood: an address whose allowance is whole again holds no
 * entry, and past `capacity` entries the least recently used one is dropped. IPv6 clients count
 * per /64, the block one host (or one customer line) gets: one machine has 2^64 addresses.
 */
export class AuthFailureLimiter implements FailureBuckets {
  /** Ordered from least to most recently used (each use moves its entry to the end). */
  private readonly allowances = new Map<string, Allowance>();

  constructor(
    private readonly capacity = DEFAULT_CAPACITY,
    private readonly now: () => number = Date.now,
    /** What is counted of a key: by default an address's block (see addressKey). */
    private readonly keyOf: (key: string) => string = addressKey,
  ) {}

  /** Takes one attempt for `address`: null when it may try its key, else the seconds to wait. */
  take(address: string, perMinute: number): number | null {
    if (perMinute <= 0) return null;
    const key = this.keyOf(address);
    const allowance = this.current(key, perMinute);
    if (allowance.attempts < 1) {
      this.remember(key, allowance);
      return Math.max(1, Math.ceil((1 - allowance.attempts) * 60 / perMinute));
    }
    allowance.attempts -= 1;
    this.remember(key, allowance);
    return null;
  }

  /** The attempt taken for `address` did not fail. */
  giveBack(address: string, perMinute: number): void {
    const key = this.keyOf(address);
    if (perMinute <= 0 || !this.allowances.has(key)) return;
    const allowance = this.current(key, perMinute);
    allowance.attempts = Math.min(perMinute, allowance.attempts + 1);
    if (allowance.attempts >= perMinute) this.allowances.delete(key);
  }

  /** A failure for which no attempt was taken beforehand. */
  fail(address: string, perMinute: number): void {
    if (perMinute <= 0) return;
    const key = this.keyOf(address);
    const allowance = this.current(key, perMinute);
    allowance.attempts = Math.max(0, allowance.attempts - 1);
    this.remember(key, allowance);
  }

  /** Addresses tracked now (tests). */
  get size(): number {
    return this.allowances.size;
  }

  private current(key: string, perMinute: number): Allowance {
    const now = this.now();
    const allowance = this.allowances.get(key) ?? { attempts: perMinute, updatedAt: now };
    // A lowered limit (SIGHUP) applies to what is left at once.
    allowance.attempts = Math.min(perMinute, allowance.attempts + ((now - allowance.updatedAt) * perMinute) / 60_000);
    allowance.updatedAt = now;
    return allowance;
  }

  private remember(key: string, allowance: Allowance): void {
    this.allowances.delete(key);
    if (this.allowances.size >= this.capacity) this.allowances.delete(this.allowances.keys().next().value!);
    this.allowances.set(key, allowance);
  }
}

/**
 * IPv4 as is; IPv6 as its /64 (`2001:db8:0:1::/64`); an embedded IPv4 tail lies in the low half.
 * An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, or `::ffff:c000:201`) is its IPv4 address:
 * as a /64 every IPv4 client would share one allowance, and one could lock out all of them.
 */
export function addressKey(address: string): string {
  if (!address.includes(':')) return address;
  const bare = address.split('%')[0]!.toLowerCase();
  const mapped = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(bare.replace(/^::/, ':'));
  if (mapped) {
    if (mapped[1]) return mapped[1];
    const high = parseInt(mapped[2]!, 16);
    const low = parseInt(mapped[3]!, 16);
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  const [head, tail] = bare.includes('::') ? bare.split('::', 2) as [string, string] : [bare, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const width = (groups: string[]) => groups.reduce((sum, group) => sum + (group.includes('.') ? 2 : 1), 0);
  const zeros = tail === undefined ? 0 : Math.max(0, 8 - width(headGroups) - width(tailGroups));
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups].slice(0, 4);
  return `${groups.map((group) => (/^[0-9a-f]{1,4}$/.test(group) ? parseInt(group, 16).toString(16) : group)).join(':')}::/64`;
}
