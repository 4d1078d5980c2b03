/**
 * Normalizes a service base URL: http(s) only, no trailing slash, `/v1` appended to a bare
 * origin (the spec's base URL ends in the version segment). Throws TypeError for anything else,
 * so callers can report it as a usage error. Kept out of http-client.ts so that checking a URL
 * (`conv config set base-url`) does not load got.
 */
export function normalizeBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`not an absolute URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`base URL must be http or https: ${value}`);
  }
  if (url.search || url.hash) throw new TypeError(`base URL must not have a query or fragment: ${value}`);
  if (url.username || url.password) throw new TypeError('base URL must not carry credentials: use --api-key');
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path === '' ? '/v1' : path}`;
}
