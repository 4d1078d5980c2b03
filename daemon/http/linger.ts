import type { IncomingMessage } from 'node:http';

/** The connection closes once the client has sent nothing for this long... */
const IDLE_MS = 1_000;
/** ...or this long after the answer at the latest. */
const MAX_MS = 5_000;

/**
 * After an error answer to a request whose body is still arriving (an upload over the limit, a
 * refused submission), the rest of the body is read and dropped for a while before the connection
 * closes ("lingering close", as nginx does). Closing at once makes the kernel reset the connection
 * when the client's next bytes arrive, and a client still sending loses the answer with the reset.
 * A body that ends in time leaves the connection usable.
 */
export function lingerThenClose(req: IncomingMessage): void {
  const socket = req.socket as IncomingMessage['socket'] | null;
  if (req.complete || !socket || socket.destroyed) return;
  const close = () => {
    clearTimeout(idle);
    clearTimeout(max);
    socket.destroy();
  };
  const idle = setTimeout(close, IDLE_MS);
  const max = setTimeout(close, MAX_MS);
  idle.unref();
  max.unref();
  req.on('data', () => idle.refresh());
  req.once('end', () => {
    clearTimeout(idle);
    clearTimeout(max);
  });
  req.resume();
}
