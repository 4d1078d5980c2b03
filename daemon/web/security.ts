/**
 * What every page of the web face answers with, and how its requests are told apart from a
 * forged one. The Content-Security-Policy allows nothing but this server's own style sheet and
 * script (no inline script or style, no other origin, no frame around the page, forms only back
 * here), so an injected tag would do nothing even if escaping ever failed.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it Chromium sends `Origin: null` with a form's POST, which then
  // cannot be told from a forged one. same-origin names nothing to other sites.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  // Pages hold an account's figures and, once, a new key: never kept by a cache.
  'cache-control': 'no-store',
};

/**
 * Whether a state-changing request comes from a page of this server: browsers name the origin
 * of every POST (`Origin`) and, in current ones, whether it is the same site (`Sec-Fetch-Site`).
 * A request naming neither is not a browser's form, and is refused too. Checked before the
 * session's own token, which every form of a signed-in page carries as well.
 */
export function sameOrigin(headers: Headers, ownOrigins: readonly string[]): boolean {
  const site = headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return false;
  const origin = headers.get('origin');
  if (origin === null) return site === 'same-origin';
  return ownOrigins.includes(origin);
}
