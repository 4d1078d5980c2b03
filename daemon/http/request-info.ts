import type { IncomingMessage } from 'node:http';

/** One answered request, as the app reports it to its listeners (logs, metrics) and the hot read path does too. */
export interface RequestInfo {
  method: string;
  /** The route pattern (`/v1/conversions/:id`), `unmatched` for anything else. */
  route: string;
  status: number;
  durationMs: number;
  accountId: string | null;
  req: IncomingMessage | undefined;
}
