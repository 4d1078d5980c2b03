import { ConversionFailure } from '../errors/api-error.ts';
import { BlockedAddressError } from './address-policy.ts';

const MIB = 2 ** 20;

/** "10 MB", or "0.00095 MB (1000 bytes)" for limits that are not whole MB (MB = 2^20 bytes). */
export function formatLimit(maxBytes: number): string {
  const mb = maxBytes / MIB;
  if (Number.isInteger(mb)) return `${mb} MB`;
  return `${mb >= 1 ? mb.toFixed(2) : Number(mb.toPrecision(2))} MB (${maxBytes} bytes)`;
}

export function tooLarge(host: string, maxBytes: number, declared?: number): ConversionFailure {
  const said = declared === undefined ? '' : ` (it announces ${declared} bytes)`;
  return new ConversionFailure('file_too_large', `the file from ${host}${said} is larger than the limit of ${formatLimit(maxBytes)}`);
}

export function fetchFailed(message: string): ConversionFailure {
  return new ConversionFailure('fetch_failed', message);
}

/** The first error of a given class along the `cause` chain (got wraps every error it reports). */
export function findCause<T extends Error>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    if (current instanceof type) return current;
    seen.add(current);
  }
  return undefined;
}

function errorCode(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code !== 'ERR_GOT_REQUEST_ERROR') return code;
    seen.add(current);
  }
  return undefined;
}

/** Turns whatever got, the agent or the socket threw into one clear English `fetch_failed`. */
export function describeFetchError(error: unknown, host: string, maxRedirects: number): ConversionFailure {
  const own = findCause(error, ConversionFailure);
  if (own) return own;
  const blocked = findCause(error, BlockedAddressError);
  if (blocked) return fetchFailed(blocked.message);
  const message = error instanceof Error ? error.message : String(error);
  // request-filtering-agent's own refusal (our checks run first, so this is the second layer speaking).
  const agent = /DNS lookup (\S+?)\(family:.*is not allowed/.exec(message);
  if (agent) return fetchFailed(`blocked: ${agent[1]} is not a public address`);
  if (/Unsupported protocol: (\S+)/.test(message)) {
    return fetchFailed(`redirect from ${host} to an unsupported scheme ${/Unsupported protocol: (\S+)/.exec(message)?.[1]} (only http and https)`);
  }
  if (/UNIX domain sockets/.test(message)) return fetchFailed('unix socket URLs are not allowed');
  const code = errorCode(error);
  switch (code) {
    case 'ERR_TOO_MANY_REDIRECTS':
      return fetchFailed(`too many redirects from ${host} (more than ${maxRedirects})`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return fetchFailed(`DNS lookup failed for ${host} (${code})`);
    case 'ECONNREFUSED':
      return fetchFailed(`connection refused by ${host}`);
    case 'ECONNRESET':
    case 'EPIPE':
      return fetchFailed(`connection to ${host} was reset`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return fetchFailed(`${host} is unreachable (${code})`);
    case 'ERR_HTTP_CONTENT_LENGTH_MISMATCH':
      return fetchFailed(`${host} closed the connection before the whole file arrived (${message})`);
    default:
      if (code && /CERT|SSL|TLS/.test(code)) return fetchFailed(`TLS error from ${host}: ${message}`);
      return fetchFailed(`download from ${host} failed: ${message}`);
  }
}
