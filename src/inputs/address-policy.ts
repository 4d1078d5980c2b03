import { BlockList, isIP } from 'node:net';

/**
 * Which IP addresses a URL input may connect to when private addresses are not allowed.
 *
 * This is our own classifier, used by the lookup guard and the literal-host check in fetch-url.ts, so
 * that a blocked download can say *why* it was blocked. request-filtering-agent stays underneath as a
 * second, independent layer (it blocks everything ipaddr.js does not classify as `unicast`). The list
 * below covers every ipaddr.js 2.x special range plus a few it misses (IPv4-compatible `::/96`, all
 * IPv6 outside global unicast 2000::/3), so the two layers never disagree in the agent's favour.
 * Sources: IANA IPv4/IPv6 Special-Purpose Address Registries.
 */
type Range = readonly [network: string, prefix: number];

/** Checked in order: the first group that matches names the reason, so narrow groups come first. */
const GROUPS: readonly { label: string; v4?: readonly Range[]; v6?: readonly Range[] }[] = [
  // AWS (and most clouds) instance metadata, ECS task credentials, Alibaba's metadata, EKS pod identity.
  {
    label: 'cloud metadata',
    v4: [['169.254.169.254', 32], ['169.254.170.2', 32], ['169.254.169.253', 32], ['100.100.100.200', 32]],
    v6: [['fd00:ec2::254', 128], ['fd00:ec2::23', 128]],
  },
  { label: 'loopback', v4: [['127.0.0.0', 8]], v6: [['::1', 128]] },
  { label: 'unspecified', v4: [['0.0.0.0', 8]], v6: [['::', 128]] },
  { label: 'private (RFC 1918)', v4: [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]] },
  { label: 'shared/CGNAT (RFC 6598)', v4: [['100.64.0.0', 10]] },
  { label: 'link-local', v4: [['169.254.0.0', 16]], v6: [['fe80::', 10]] },
  { label: 'unique-local (RFC 4193)', v6: [['fc00::', 7]] },
  { label: 'site-local (deprecated)', v6: [['fec0::', 10]] },
  { label: 'multicast', v4: [['224.0.0.0', 4]], v6: [['ff00::', 8]] },
  {
    label: 'reserved or special-purpose',
    v4: [
      ['192.0.0.0', 24], // IETF protocol assignments
      ['192.0.2.0', 24], ['198.51.100.0', 24], ['203.0.113.0', 24], // documentation
      ['192.88.99.0', 24], // 6to4 relay anycast
      ['198.18.0.0', 15], // benchmarking
      ['192.31.196.0', 24], ['192.175.48.0', 24], // AS112
      ['192.52.193.0', 24], // AMT
      ['240.0.0.0', 4], // reserved, includes broadcast 255.255.255.255
    ],
    v6: [
      ['100::', 64], // discard
      ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID, ...
      ['2001:db8::', 32], ['3fff::', 20], // documentation
      ['2620:4f:8000::', 48], // AS112
    ],
  },
  // Forms that embed an IPv4 address a gateway would reach for us: the embedded address could be
  // private, and a public file server has no reason to publish one of these as its address.
  {
    label: 'IPv4-embedding (mapped/compatible/NAT64/6to4)',
    v6: [['::ffff:0:0', 96], ['::', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['2002::', 16]],
  },
];

function buildList(ranges: readonly Range[], family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const COMPILED = GROUPS.map((group) => ({
  label: group.label,
  v4: buildList(group.v4 ?? [], 'ipv4'),
  v6: buildList(group.v6 ?? [], 'ipv6'),
}));

const GLOBAL_UNICAST_V6 = buildList([['2000::', 3]], 'ipv6');

/**
 * Why `address` must not be contacted, or null when it is a public address. A string that is not an
 * IP address at all is refused too (never guess). IPv4-mapped IPv6 addresses such as
 * `::ffff:127.0.0.1` / `::ffff:7f00:1` are judged by the IPv4 rules first (BlockList applies IPv4
 * rules to mapped addresses), so they get the specific reason ("loopback", not just "mapped").
 */
export function blockedAddressReason(address: string, allowed?: BlockList): string | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const version = isIP(bare);
  if (version === 0) return 'not an IP address';
  if (version === 6 && bare.includes('%')) return 'scoped IPv6 address';
  const reason = classify(bare, version);
  // An operator's own private network (url_allow_networks). Never one of them: cloud metadata,
  // link-local (where clouds put their credential services) and forms that embed an IPv4 address.
  if (reason !== null && !NEVER_ALLOWED.has(reason) && allowed?.check(bare, version === 4 ? 'ipv4' : 'ipv6')) return null;
  return reason;
}

const NEVER_ALLOWED = new Set(['cloud metadata', 'link-local', 'IPv4-embedding (mapped/compatible/NAT64/6to4)']);

function classify(bare: string, version: number): string | null {
  for (const group of COMPILED) {
    if (version === 4 ? group.v4.check(bare, 'ipv4') : group.v4.check(bare, 'ipv6') || group.v6.check(bare, 'ipv6')) {
      return group.label;
    }
  }
  if (version === 6 && !GLOBAL_UNICAST_V6.check(bare, 'ipv6')) return 'reserved (outside global unicast 2000::/3)';
  return null;
}

export function isPublicAddress(address: string): boolean {
  return blockedAddressReason(address) === null;
}

/** A BlockList of addresses and CIDR ranges (`10.0.0.5`, `10.1.0.0/16`, `fd00::/8`), already validated. */
export function networkList(list: readonly string[]): BlockList {
  const blocks = new BlockList();
  for (const item of list) {
    const [address, bits] = item.split('/') as [string, string | undefined];
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) blocks.addAddress(address, type);
    else blocks.addSubnet(address, Number(bits), type);
  }
  return blocks;
}

/** A connection refused by the address policy; fetch-url turns it into a `fetch_failed` message. */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_CONVD_BLOCKED_ADDRESS';
  constructor(readonly address: string, readonly reason: string, readonly host?: string) {
    const from = host && host !== address ? ` (resolved from ${host})` : '';
    super(`blocked: ${address}${from} is not a public address (${reason})`);
    this.name = 'BlockedAddressError';
  }
}
