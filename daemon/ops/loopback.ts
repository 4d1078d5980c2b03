import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether a listener bound to `host` can be reached from this machine only: 127.0.0.0/8, ::1
 * (bracketed or not, also as ::ffff:127.x.y.z) and `localhost`. Anything else, 0.0.0.0 and ::
 * first, may be reachable from the network.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.trim().replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  const ip = bare.startsWith('::ffff:') && bare.includes('.') ? bare.slice(7) : bare;
  const family = isIP(ip);
  return family !== 0 && LOOPBACK.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}
