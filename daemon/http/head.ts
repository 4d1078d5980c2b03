import type { IncomingMessage } from 'node:http';

/**
 * HEAD is GET without a body (RFC 9110, 9.3.2), so `curl -I` on a download tells its size. h3
 * routes by method and would answer 405: a HEAD request is routed as GET instead. node:http
 * decided when the request arrived that its answer has no body and drops whatever is written;
 * the routes that would read something only to be dropped (a download's file) ask `wasHead`.
 */
const headRequests = new WeakSet<IncomingMessage>();

export function routeHeadAsGet(req: IncomingMessage): void {
  if (req.method !== 'HEAD') return;
  headRequests.add(req);
  req.method = 'GET';
}

export function wasHead(req: IncomingMessage): boolean {
  return headRequests.has(req);
}

/** The method to log and count: HEAD for a HEAD request routed as GET. */
export function reportedMethod(req: IncomingMessage | undefined, routed: string): string {
  return req && headRequests.has(req) ? 'HEAD' : routed;
}
