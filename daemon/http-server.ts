import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpServerHandle {
  server: Server;
  address: AddressInfo;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes what is left. */
  close(graceMs?: number): Promise<void>;
}

/**
 * node:http rather than listhen: listhen wraps every server in http-shutdown, whose `finish`
 * handler dereferences `req.socket` and throws — taking the whole daemon down — when a response
 * ends after its socket was detached (a client that hangs up mid-upload can arrange that).
 * Listening and draining are a few lines here, with the timeouts a file service needs.
 */
export async function startHttpServer(handler: RequestListener, host: string, port: number): Promise<HttpServerHandle> {
  const server = createServer({ keepAliveTimeout: 5_000 }, handler);
  // Uploads of several GB on slow links must not be cut by Node's 5-minute request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    address: server.address() as AddressInfo,
    close(graceMs = 10_000) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}
