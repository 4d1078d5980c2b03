import { isIP, type LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
import got, { type Agents } from 'got';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { BlockedAddressError, blockedAddressReason } from '../inputs/address-policy.ts';
import { createGuardedLookup } from '../inputs/guarded-lookup.ts';

/**
 * One webhook POST over the network. Knows nothing of deliveries or schedules: it sends bytes and
 * reports a status code or an error, so that the deliverer decides what counts as success.
 */

export interface TransportOptions {
  /** Allow private, loopback and link-local addresses (test-only daemon flag). */
  allowPrivateAddresses: boolean;
  /** Extra PEM CA(s) to trust beside the system roots (tests trust a self-signed receiver). */
  trustedCa?: string | Buffer;
  timeoutMs: number;
  userAgent?: string;
}

export interface PostOutcome {
  /** The receiver's status code, or null when none arrived (connection error, time-out, SSRF block). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** Response bodies are not used; read at most this much so the socket can close cleanly. */
const MAX_DRAINED_BYTES = 64 * 1024;

export class WebhookTransport {
  private readonly httpAgent: RequestFilteringHttpAgent;
  private readonly httpsAgent: RequestFilteringHttpsAgent;
  private readonly agents: Agents;
  private readonly allowPrivateAddresses: boolean;
  /** The URL-input guard (src/inputs/), so callbacks and downloads obey one address policy. */
  private readonly lookup: LookupFunction | undefined;
  private readonly timeoutMs: number;
  private readonly userAgent: string;

  constructor(options: TransportOptions) {
    this.timeoutMs = options.timeoutMs;
    this.allowPrivateAddresses = options.allowPrivateAddresses;
    this.lookup = options.allowPrivateAddresses ? undefined : createGuardedLookup();
    this.userAgent = options.userAgent ?? 'convd-webhooks';
    const filter = { allowPrivateIPAddress: options.allowPrivateAddresses, keepAlive: false };
    // `ca` replaces the default roots in Node, so the system roots are kept beside the extra CA.
    const ca = options.trustedCa === undefined ? undefined : [...rootCertificates, options.trustedCa.toString()];
    // Two layers, as for URL inputs: the guarded lookup refuses a name if any address it resolves
    // to is not public (checked inside the connection, so DNS rebinding finds no gap), and the
    // filtering agents check again whatever address is connected to, literal IPs included.
    this.httpAgent = new RequestFilteringHttpAgent(filter);
    this.httpsAgent = new RequestFilteringHttpsAgent({ ...filter, ca });
    this.agents = { http: this.httpAgent, https: this.httpsAgent };
  }

  post(url: string, body: Buffer, headers: Record<string, string>): Promise<PostOutcome> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    const blocked = this.literalAddressBlocked(url);
    if (blocked) return Promise.resolve({ statusCode: null, error: blocked.message, durationMs: elapsed() });
    return new Promise<PostOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: Omit<PostOutcome, 'durationMs'>): void => {
        if (settled) return;
        settled = true;
        resolve({ ...outcome, durationMs: elapsed() });
      };
      let stream: ReturnType<typeof got.stream.post>;
      try {
        stream = got.stream.post(url, {
          body,
          headers: { ...headers, 'user-agent': this.userAgent },
          agent: this.agents,
          ...(this.lookup ? { dnsLookup: this.lookup } : {}),
          http2: false,
          // A redirect is an answer that is not 2xx: following it would let a receiver point the
          // daemon at an address the guard never saw as the callback URL.
          followRedirect: false,
          throwHttpErrors: false,
          retry: { limit: 0 },
          decompress: false,
          enableUnixSockets: false, // `http://unix:/path:/` must not reach a local socket
          timeout: { request: this.timeoutMs },
        });
      } catch (error) {
        // got validates options synchronously (an unusable URL): still just a failed attempt.
        finish({ statusCode: null, error: describeError(error as Error & { code?: string }) });
        return;
      }
      stream.on('response', (response: { statusCode: number }) => {
        // The verdict is the status line; the body is drained (bounded) and thrown away.
        finish({ statusCode: response.statusCode, error: null });
        let drained = 0;
        stream.on('data', (chunk: Buffer) => {
          drained += chunk.length;
          if (drained > MAX_DRAINED_BYTES) stream.destroy();
        });
      });
      stream.on('error', (error: Error & { code?: string }) => {
        finish({ statusCode: null, error: describeError(error) });
      });
    });
  }

  /** A literal IP host never goes through DNS, so the lookup guard would not see it. */
  private literalAddressBlocked(url: string): BlockedAddressError | null {
    if (this.allowPrivateAddresses) return null;
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      return null; // got reports the invalid URL itself
    }
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    if (isIP(bare) === 0) return null;
    const reason = blockedAddressReason(bare);
    return reason === null ? null : new BlockedAddressError(bare, reason);
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function describeError(error: Error & { code?: string }): string {
  if (error.code === 'ETIMEDOUT' || error.name === 'TimeoutError') return 'timeout';
  // The guard's message already says what was blocked and why.
  if (error.code === 'ERR_CONVD_BLOCKED_ADDRESS') return error.message;
  return error.code ? `${error.code}: ${error.message}` : error.message;
}
