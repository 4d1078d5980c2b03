import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';

/** The Node request under an h3 event (h3's node adapter keeps it there): its socket, its raw body stream. */
export const nodeRequest = (event: H3Event): IncomingMessage | undefined =>
  (event.req as { runtime?: { node?: { req: IncomingMessage } } }).runtime?.node?.req;
