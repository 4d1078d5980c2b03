import { isIP } from 'node:net';
import { networkList } from '../src/inputs/address-policy.ts';
import { parseBlobUrl } from '../src/store/s3/blob-url.ts';

/**
 * The kinds of value a setting can hold. Each parses a value from the command line or the
 * environment (text) or from the config file (JSON), and throws a `ValueError` whose message
 * completes "<where> must be ...", so every complaint names the setting and what it expects.
 */
export interface Kind<T> {
  /** What a valid value looks like, for messages and `--help`. */
  expects: string;
  parse(value: unknown): T;
  /** The value as a config file would hold it (e.g. a duration with its unit); default as is. */
  format?(value: T): unknown;
}

export class ValueError extends Error {}

const reject = (kind: { expects: string }, value: unknown): never => {
  throw new ValueError(`must be ${kind.expects}, not ${JSON.stringify(value)}`);
};

export function integer(min: number, max = Number.MAX_SAFE_INTEGER): Kind<number> {
  const kind: Kind<number> = {
    expects: max === Number.MAX_SAFE_INTEGER ? `a whole number >= ${min}` : `a whole number from ${min} to ${max}`,
    parse(value) {
      const number = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
      if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) return reject(kind, value);
      return number;
    },
  };
  return kind;
}

/** A number in (min, max]: the lower bound itself is excluded (a scale of 0 makes no sense). */
export function fraction(min: number, max: number): Kind<number> {
  const kind: Kind<number> = {
    expects: `a number greater than ${min} and at most ${max}`,
    parse(value) {
      const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof number !== 'number' || !(number > min && number <= max)) return reject(kind, value);
      return number;
    },
  };
  return kind;
}

export const boolean: Kind<boolean> = {
  expects: 'true or false (also 1/0, yes/no, on/off)',
  parse(value) {
    if (typeof value === 'boolean') return value;
    if (typeof value === 'string') {
      if (/^(1|true|yes|on)$/i.test(value.trim())) return true;
      if (/^(0|false|no|off)$/i.test(value.trim())) return false;
    }
    return reject(boolean, value);
  },
};

export function text(expects = 'a non-empty string'): Kind<string> {
  const kind: Kind<string> = {
    expects,
    parse: (value) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : reject(kind, value)),
  };
  return kind;
}

export function oneOf<const T extends string>(values: readonly T[]): Kind<T> {
  const kind: Kind<T> = {
    expects: `one of ${values.join(', ')}`,
    parse: (value) => (typeof value === 'string' && (values as readonly string[]).includes(value.trim()) ? (value.trim() as T) : reject(kind, value)),
  };
  return kind;
}

export const postgresUrl: Kind<string> = {
  expects: 'a PostgreSQL URL (postgres://user:password@host:5432/database)',
  parse(value) {
    // Never quoted back: a database URL may hold a password (start-up messages, SIGHUP log lines).
    const refuse = (): never => {
      throw new ValueError(`must be ${postgresUrl.expects} (the value given is not shown: it may hold a password)`);
    };
    if (typeof value !== 'string') return refuse();
    try {
      const url = new URL(value.trim());
      if ((url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') || !url.hostname) return refuse();
      return value.trim();
    } catch {
      return refuse();
    }
  },
};

export const blobUrl: Kind<string> = {
  expects: 'an S3 URL (s3://bucket/prefix, with ?endpoint=URL&region=R&force_path_style=true for an S3-compatible server)',
  parse(value) {
    if (typeof value !== 'string') return reject(blobUrl, value);
    try {
      parseBlobUrl(value.trim());
    } catch (error) {
      throw new ValueError(`must be ${blobUrl.expects}; it ${error instanceof Error ? error.message : String(error)}`);
    }
    return value.trim();
  },
};

export const httpUrl: Kind<string> = {
  expects: 'an absolute http or https URL',
  parse(value) {
    if (typeof value !== 'string') return reject(httpUrl, value);
    try {
      const url = new URL(value.trim());
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(httpUrl, value);
      return value.trim();
    } catch {
      return reject(httpUrl, value);
    }
  },
};

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest duration: every one ends up in a timer, and Node fires a timer longer than this
 * (2^31 - 1 ms, about 24.8 days) after 1 ms: "720h" meant as "never" would cut every request.
 */
const MAX_DURATION_MS = 2_147_483_647;

/** A duration in milliseconds: `500ms`, `10s`, `2m`, `1h`; a bare number counts `bareUnit`s. */
export function duration(bareUnit: 's' | 'ms', min = 0): Kind<number> {
  const kind: Kind<number> = {
    expects: `a duration such as 500ms, 10s, 2m or 1h (a bare number counts ${bareUnit === 's' ? 'seconds' : 'milliseconds'})${min > 0 ? `, at least ${min} ms` : ''}, at most 24 days`,
    parse(value) {
      let ms: number;
      if (typeof value === 'number') ms = value * UNITS[bareUnit]!;
      else if (typeof value === 'string') {
        const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
        if (!match) return reject(kind, value);
        ms = Number(match[1]) * UNITS[match[2] ?? bareUnit]!;
      } else return reject(kind, value);
      if (!Number.isFinite(ms) || ms < min || ms > MAX_DURATION_MS) return reject(kind, value);
      return Math.round(ms);
    },
    format: (ms) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`),
  };
  return kind;
}

export interface ListenAddress {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port`, or a bare port (bound to 127.0.0.1). */
export const listenAddress: Kind<ListenAddress> = {
  expects: 'host:port, [ipv6]:port or a port number',
  parse(value) {
    const raw = typeof value === 'number' ? String(value) : value;
    if (typeof raw !== 'string') return reject(listenAddress, value);
    const match = /^\s*(?:\[([^\]]+)\]|([^:\s[\]]+))?:?(\d{1,5})\s*$/.exec(raw);
    const port = Number(match?.[3]);
    if (!match || port > 65535 || (!match[1] && !match[2] && raw.includes(':'))) return reject(listenAddress, value);
    if (match[1] && isIP(match[1]) !== 6) return reject(listenAddress, value);
    return { host: match[1] ?? match[2] ?? '127.0.0.1', port };
  },
  format: ({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`,
};

/** Addresses and CIDR ranges: a comma-separated list in text, a list or a string in the file. */
export const addressList: Kind<string[]> = {
  expects: 'a list of IP addresses or CIDR ranges (e.g. 127.0.0.1,10.0.0.0/8,::1)',
  parse(value) {
    const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : null;
    if (!items) return reject(addressList, value);
    if (items.length === 0) return reject(addressList, value);
    const list = items.map((item) => (typeof item === 'string' && item.trim() !== '' ? item.trim() : reject(addressList, value)));
    for (const item of list) {
      const [address, bits, extra] = item.split('/');
      const family = isIP(address ?? '');
      const maxBits = family === 6 ? 128 : 32;
      if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))) {
        throw new ValueError(`must be ${addressList.expects}; ${JSON.stringify(item)} is neither`);
      }
    }
    return list;
  },
};

/** A BlockList of the addresses and ranges of an `addressList` value. */
export const toBlockList = networkList;
