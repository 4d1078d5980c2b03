/** A loopback TCP server that counts every connection made to it: the pages a test renders must make none. */
import { createServer } from 'node:net';

export interface Canary {
  port: number;
  /** Connections so far. */
  hits(): number;
  close(): void;
}

export async function startCanary(): Promise<Canary> {
  let hits = 0;
  const server = createServer((socket) => {
    hits++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { port: (server.address() as { port: number }).port, hits: () => hits, close: () => void server.close() };
}
