/**
 * What is wrong with a URL as a download source, or null when it may be fetched.
 *
 * Decision: URLs with credentials (`https://user:pass@host/...`) are refused. The URL of an input is
 * stored with the conversion and may show up in logs and listings, so a password in it would leak;
 * the spec asks for a *public* URL anyway.
 */
export function urlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not an absolute URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `unsupported URL scheme ${parsed.protocol} (only http and https)`;
  }
  if (parsed.hostname === '') return 'the URL has no host';
  if (parsed.username !== '' || parsed.password !== '') return 'URLs with credentials are not accepted';
  return null;
}

/** Absolute http(s) URL with a host and without credentials. */
export function isFetchableUrl(url: string): boolean {
  return urlProblem(url) === null;
}
