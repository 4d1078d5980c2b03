import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import type { BlockList, LookupFunction } from 'node:net';
import { BlockedAddressError, blockedAddressReason } from './address-policy.ts';

/** Resolves every address of a host name (the shape of `dns.lookup` with `all: true`). */
export type ResolveAll = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolveAll: ResolveAll = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, callback);
};

/**
 * A `lookup` for sockets (passed through got's `dnsLookup`, and wrapped once more by
 * request-filtering-agent) that refuses a host as soon as ANY of its addresses is not public.
 * Checking the very addresses the socket then connects to (inside the connection, on every request and
 * redirect) leaves no gap between check and use for DNS rebinding to slip through. `allowed` holds
 * the operator's own private networks that are let through (url_allow_networks).
 */
export function createGuardedLookup(resolveAll: ResolveAll = systemResolveAll, allowed?: BlockList): LookupFunction {
  const lookup = (
    hostname: string,
    options: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolveAll(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const first = addresses[0];
      if (!first) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = 'ENOTFOUND';
        return callback(notFound, '');
      }
      for (const { address } of addresses) {
        const reason = blockedAddressReason(address, allowed);
        if (reason !== null) return callback(new BlockedAddressError(address, reason, hostname), '');
      }
      // Same order as a plain lookup would give, so `all: false` gets the address it would have got.
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
  return lookup as LookupFunction;
}
