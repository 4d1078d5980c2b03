import { readFile } from 'node:fs/promises';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

/** Reads the certificate chain and key named by tls_cert and tls_key. */
export async function readTlsFiles(paths: { cert: string; key: string }): Promise<TlsFiles> {
  return { cert: await readFile(paths.cert), key: await readFile(paths.key) };
}

/** `host:port` as a URL carries it (an IPv6 address in brackets). */
function hostPort(address: AddressInfo): string {
  return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

export interface HttpServerHandle {
  server: Server | TlsServer;
  address: AddressInfo;
  /** `http://127.0.0.1:7700` (or https), the address it is reachable at. */
  url: string;
  /**
   * Answers carry `Connection: close` from now on (those in progress too, unless their headers
   * are out already), and connections are closed as soon as they fall idle.
   */
  drain(): void;
  /** Stops accepting and waits until the connections in use are done (up to `graceMs`), then closes what is left. */
  close(graceMs?: number): Promise<void>;
  /** New certificate and key for new connections (SIGHUP after a renewal); false when not serving TLS. */
  setTls(files: TlsFiles): boolean;
  /** The daemon's own limit for a whole request body changed (SIGHUP): moves Node's backstop with it. */
  setRequestTimeout(ms: number): void;
}

/**
 * Node's own request timeout sits this far above the daemon's: Node answers a bare 408 with no
 * body (and checks only every 30 s), the daemon a 408 in the error shape, which must come first.
 */
const BACKSTOP_MARGIN_MS = 10_000;

/**
 * node:http rather than listhen: listhen wraps every server in http-shutdown, whose `finish`
 * handler dereferences `req.socket` and throws — taking the whole daemon down — when a response
 * ends after its socket was detached (a client that hangs up mid-upload can arrange that).
 * Listening and draining are a few lines here, with the timeouts a file service needs.
 * With `tls`, node:https serves the same handler.
 */
export async function startHttpServer(
  handler: RequestListener,
  host: string,
  port: number,
  tls: TlsFiles | null,
  requestTimeoutMs: number,
): Promise<HttpServerHandle> {
  let draining = false;
  const listener: RequestListener = (req, res) => {
    if (draining) res.setHeader('connection', 'close');
    handler(req, res);
  };
  const options = { keepAliveTimeout: 5_000 };
  const server: Server | TlsServer = tls ? createTlsServer({ ...options, cert: tls.cert, key: tls.key }, listener) : createServer(options, listener);
  // The daemon times the bodies it reads itself (request_timeout, upload_idle_timeout). Node's
  // limit is the backstop for a body nobody reads (a route that takes none), which nothing else
  // would end; its 5-minute default would cut uploads of several GB on slow links.
  server.requestTimeout = requestTimeoutMs + BACKSTOP_MARGIN_MS;
  server.headersTimeout = 60_000;
  // Per connection, not per request: the hot path stays as it is.
  const sockets = new Set<Socket>();
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  let idleSweep: NodeJS.Timeout | undefined;
  const drain = () => {
    if (draining) return;
    draining = true;
    for (const socket of sockets) {
      // The answer being prepared on this connection (Node's own field, as http-terminator reads it).
      const res = (socket as Socket & { _httpMessage?: { headersSent: boolean; setHeader(name: string, value: string): void } | null })._httpMessage;
      if (res && !res.headersSent) res.setHeader('connection', 'close');
    }
    server.closeIdleConnections();
    // A download whose headers were out keeps its connection open after it: close it once idle.
    idleSweep = setInterval(() => server.closeIdleConnections(), 200);
    idleSweep.unref();
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    address,
    url: `${tls ? 'https' : 'http'}://${hostPort(address)}`,
    drain,
    close(graceMs = 10_000) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          clearInterval(idleSweep);
          resolve();
        });
        drain();
      });
    },
    setRequestTimeout(ms) {
      server.requestTimeout = ms + BACKSTOP_MARGIN_MS;
    },
    setTls(files) {
      if (!tls) return false;
      (server as TlsServer).setSecureContext({ cert: files.cert, key: files.key });
      return true;
    },
  };
}

/** Binds a plain server made elsewhere (the metrics listener) and gives its address, `http://host:port`. */
export async function listenPlain(server: Server, at: { host: string; port: number }): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => resolve());
  });
  return `http://${hostPort(server.address() as AddressInfo)}`;
}
