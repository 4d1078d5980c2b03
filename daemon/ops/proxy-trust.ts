import type { IncomingMessage } from 'node:http';
import type { BlockList } from 'node:net';
import { toBlockList } from '../config-kinds.ts';

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function plain(address: string | undefined): string {
  // A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d.
  return address?.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : (address ?? '');
}

function firstValue(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value?.split(',')[0]?.trim() || undefined;
}

/**
 * X-Forwarded-For/-Proto/-Host are believed only from the configured proxy addresses: from
 * anyone else they are whatever a client chose to send, and links built from them would point
 * wherever that client wanted.
 */
export class ProxyTrust {
  private blocks: BlockList | null = null;

  constructor(addresses: readonly string[]) {
    this.set(addresses);
  }

  /** Replaces the trusted addresses (SIGHUP). */
  set(addresses: readonly string[]): void {
    this.blocks = addresses.length > 0 ? toBlockList(addresses) : null;
  }

  get enabled(): boolean {
    return this.blocks !== null;
  }

  trusts(address: string | undefined): boolean {
    if (!this.blocks || !address) return false;
    const ip = plain(address);
    return this.blocks.check(ip, ip.includes(':') ? 'ipv6' : 'ipv4');
  }

  /**
   * The client's address for logs: the socket's peer, or, when the peer is a trusted proxy, the
   * right-most X-Forwarded-For entry that is not itself a trusted proxy.
   */
  clientAddress(req: IncomingMessage): string {
    const peer = plain(req.socket.remoteAddress);
    if (!this.trusts(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const chain = (Array.isArray(header) ? header.join(',') : header ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    for (let i = chain.length - 1; i >= 0; i--) if (!this.trusts(chain[i])) return plain(chain[i]);
    return chain[0] ?? peer;
  }

  /**
   * `proto://host` the client used, from a trusted proxy's X-Forwarded-Proto/-Host (the Host
   * header stands in for a missing X-Forwarded-Host); null when the peer is not trusted or sent
   * neither header.
   */
  forwardedOrigin(req: IncomingMessage): string | null {
    if (!this.trusts(req.socket.remoteAddress)) return null;
    const forwardedHost = firstValue(req.headers['x-forwarded-host']);
    const proto = firstValue(req.headers['x-forwarded-proto'])?.toLowerCase();
    if (forwardedHost === undefined && proto === undefined) return null;
    const host = forwardedHost ?? req.headers.host;
    if (!host || !HOST.test(host)) return null;
    const scheme = proto === 'https' || proto === 'http' ? proto : (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    return `${scheme}://${host}`;
  }
}
