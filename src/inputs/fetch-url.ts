import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { type BlockList, isIP } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import got, { type Options, type PlainResponse } from 'got';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { ConversionFailure } from '../errors/api-error.ts';
import { BlockedAddressError, blockedAddressReason, networkList } from './address-policy.ts';
import { describeFetchError, fetchFailed, tooLarge } from './fetch-errors.ts';
import { createGuardedLookup } from './guarded-lookup.ts';
import { urlProblem } from './url-check.ts';

export { nameFromUrl } from './url-name.ts';
export { isFetchableUrl } from './url-check.ts';

export interface FetchOptions {
  /** Size cap in bytes, enforced while streaming (a larger Content-Length is refused up front). */
  maxBytes: number;
  /** Time limit of the whole download: DNS, connect, redirects, body and closing the file. */
  timeoutMs: number;
  /** Trusted internal use only (`--allow-private-urls`): allow loopback and private addresses. */
  allowPrivate: boolean;
  /**
   * Private addresses and CIDR ranges that may be reached all the same (`url_allow_networks`: an
   * internal file server); every other address stays under the policy, cloud metadata always.
   */
  allowedNetworks?: readonly string[];
  /** Cancels the download; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Default 5. */
  maxRedirects?: number;
}

export interface FetchedFile {
  bytes: number;
  contentType: string | null;
  finalUrl: string;
}

const USER_AGENT = 'convd (file conversion service; URL input)';

/**
 * Downloads `url` to `destPath` (created or truncated). Failures are `ConversionFailure`s:
 * `file_too_large` over `maxBytes`, `fetch_failed` for anything the remote side or the address policy
 * caused, `internal_error` when the local file cannot be written. Abort rejects with `signal.reason`.
 * On every failure the partial file is deleted; sockets and the file handle are always closed.
 */
export async function fetchUrlToFile(url: string, destPath: string, options: FetchOptions): Promise<FetchedFile> {
  const { signal, maxBytes, timeoutMs, allowPrivate } = options;
  const maxRedirects = options.maxRedirects ?? 5;
  signal?.throwIfAborted();
  const problem = urlProblem(url);
  if (problem !== null) throw fetchFailed(`cannot fetch this URL: ${problem}`);

  let currentHost = new URL(url).host;
  let failure: Error | undefined;
  let bytes = 0;
  let contentType: string | null = null;
  let finalUrl = url;

  const allowedNetworks = options.allowedNetworks ?? [];
  const allowed = allowedNetworks.length > 0 ? networkList(allowedNetworks) : undefined;
  const agents = createAgents(allowPrivate, allowedNetworks);
  const file = createWriteStream(destPath);
  const request = got.stream(url, {
    agent: agents,
    http2: false, // request-filtering-agent only guards http(s).Agent connections
    dnsLookup: allowPrivate ? undefined : createGuardedLookup(undefined, allowed),
    retry: { limit: 0 },
    maxRedirects,
    throwHttpErrors: false, // statuses are judged below, with a message naming the host
    strictContentLength: true, // a body cut short is an error, not a smaller file
    enableUnixSockets: false,
    headers: { 'user-agent': USER_AGENT },
    hooks: { beforeRequest: [(requestOptions) => checkTarget(requestOptions.url, allowPrivate, allowed)] },
  });
  const fail = (error: Error): void => {
    failure ??= error;
    if (!request.destroyed) request.destroy(error);
  };
  // pipeline() reports the stream's errors; this only keeps a late one (a time-out firing between the
  // end of the pipeline and clearTimeout) from becoming an uncaught 'error' event.
  request.on('error', () => undefined);

  request.on('redirect', (updated: Options) => {
    if (updated.url instanceof URL) currentHost = updated.url.host;
  });
  request.on('response', (response: PlainResponse) => {
    finalUrl = response.url;
    currentHost = new URL(response.url).host;
    const status = response.statusCode;
    if (status < 200 || status > 299) {
      fail(fetchFailed(`HTTP ${status} from ${currentHost}`));
      return;
    }
    contentType = response.headers['content-type'] ?? null;
    // Content-Length counts encoded bytes; compare only when the body arrives as it will be stored.
    const encoding = response.headers['content-encoding'];
    const declared = Number(response.headers['content-length']);
    if ((!encoding || encoding === 'identity') && Number.isFinite(declared) && declared > maxBytes) {
      fail(tooLarge(currentHost, maxBytes, declared));
    }
  });

  // Counts what is written (decoded bytes, so a compressed bomb stops at the cap too).
  const counter = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        failure ??= tooLarge(currentHost, maxBytes);
        callback(failure);
        return;
      }
      callback(null, chunk);
    },
  });

  const timer = setTimeout(() => {
    fail(fetchFailed(`timed out after ${timeoutMs / 1000} s while fetching from ${currentHost}`));
  }, timeoutMs);
  const onAbort = (): void => {
    request.destroy();
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  try {
    await pipeline(request, counter, file);
    await closed(file);
    signal?.throwIfAborted(); // cancellation wins even when it arrives with the last byte
    return { bytes, contentType, finalUrl };
  } catch (error) {
    await closed(file);
    await rm(destPath, { force: true });
    if (signal?.aborted) throw signal.reason;
    throw failure ?? localFileError(error, destPath) ?? describeFetchError(error, currentHost, maxRedirects);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    request.destroy();
    agents.http.destroy();
    agents.https.destroy();
  }
}

/**
 * One pair of agents per download, without keep-alive, destroyed at the end: no socket outlives the
 * call (Node's global agent keeps sockets alive). With private addresses refused, the filtering agents
 * check every address again at connect time, a second layer under our own lookup guard.
 */
function createAgents(allowPrivate: boolean, allowedNetworks: readonly string[]): { http: http.Agent; https: https.Agent } {
  // With the operator's own networks let through, our lookup guard and literal check (both on
  // every hop) are the policy: request-filtering-agent's allow list compares single addresses as
  // text and fails on a list of both families, so it would refuse what the policy allows.
  if (allowPrivate || allowedNetworks.length > 0) return { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) };
  const filter = { keepAlive: false, allowPrivateIPAddress: false, allowMetaIPAddress: false };
  return { http: new RequestFilteringHttpAgent(filter), https: new RequestFilteringHttpsAgent(filter) };
}

/**
 * Runs before the first request and before every redirected one. Host names are checked by the lookup
 * guard; an IP literal never reaches a lookup, so it is checked here, before any socket is opened.
 * (got itself already refuses to follow a redirect to a scheme other than http and https.)
 */
function checkTarget(target: string | URL | undefined, allowPrivate: boolean, allowed: BlockList | undefined): void {
  if (!(target instanceof URL)) return;
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw fetchFailed(`unsupported URL scheme ${target.protocol} (only http and https)`);
  }
  if (allowPrivate) return;
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) === 0) return;
  const reason = blockedAddressReason(host, allowed);
  if (reason !== null) throw new BlockedAddressError(host, reason);
}

/** Waits until the file handle is released (also when the stream failed before or after opening). */
async function closed(file: WriteStream): Promise<void> {
  if (file.closed) return;
  // Not events.once: that rejects on the 'error' the failed pipeline may still be delivering here.
  const done = new Promise<void>((resolve) => file.once('close', () => resolve()));
  file.on('error', () => undefined);
  file.destroy();
  await done;
}

/** Local disk errors (full disk, missing directory) are ours, not the remote server's. */
function localFileError(error: unknown, destPath: string): ConversionFailure | undefined {
  const errno = error as NodeJS.ErrnoException;
  if (error instanceof Error && errno.path === destPath) {
    return new ConversionFailure('internal_error', `cannot write the download to disk: ${errno.code ?? error.message}`);
  }
  return undefined;
}
