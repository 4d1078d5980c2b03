/** The API's base address as links and Location carry it: the address given, ending in /v1. */
export function baseUrlOf(address: string): string {
  return `${address.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`;
}

/**
 * The path the web pages are served under: public_url's path ('' at the host's root). A public_url
 * that names /v1 itself means the same as without it, as for the API's links (baseUrlOf).
 */
export function pagesBasePath(publicUrl: string | undefined): string {
  return publicUrl ? new URL(baseUrlOf(publicUrl)).pathname.replace(/\/v1$/, '') : '';
}
