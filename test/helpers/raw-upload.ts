/**
 * A client that misbehaves on purpose, over a raw socket (node:net): it sends the headers of a
 * POST, then as much of the body as the test writes, whenever it writes it, and records when the
 * answer came and when the server closed the connection. fetch and node:http would send the body
 * on their own schedule and hide both moments.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

export const BOUNDARY = 'convd-test-boundary';

export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  text: string;
  /** The parsed body, when it is JSON. */
  json: unknown;
  /** performance.now() when the whole answer had arrived. */
  at: number;
}

/** The fields and the head of the file part of a multipart body: what comes before the file's bytes. */
export function multipartHead(fields: Record<string, string>, filename: string): Buffer {
  let text = '';
  for (const [name, value] of Object.entries(fields)) {
    text += `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  text += `--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`;
  return Buffer.from(text);
}

export const MULTIPART_TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

function parseAnswer(raw: Buffer, complete: boolean): RawAnswer | null {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (body.length < length) return null;
    body = body.subarray(0, length);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const text = body.toString('latin1');
    if (!text.includes('\r\n0\r\n\r\n') && !text.startsWith('0\r\n\r\n')) return null;
    body = Buffer.from(text.replace(/(^|\r\n)[0-9a-f]+\r\n/gi, '').replace(/\r\n$/, ''), 'latin1');
  } else if (!complete) {
    // No length: the body runs to the close (Node's own bare 408 has none at all).
    return null;
  }
  const text = body.toString('utf8');
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status, headers, text, json, at: performance.now() };
}

export class RawRequest {
  /** Body bytes written so far. */
  sent = 0;
  /** `sent` when the first byte of the answer arrived; -1 before. */
  sentWhenAnswered = -1;
  /** Resolves with the answer; rejects if the connection closes without one. */
  readonly answer: Promise<RawAnswer>;
  /** Resolves with performance.now() when the connection is closed (by either side). */
  readonly closed: Promise<number>;

  private constructor(readonly socket: Socket, private readonly chunked: boolean) {
    const received: Buffer[] = [];
    this.answer = new Promise((resolve, reject) => {
      socket.on('data', (data: Buffer) => {
        if (this.sentWhenAnswered < 0) this.sentWhenAnswered = this.sent;
        received.push(data);
        const answer = parseAnswer(Buffer.concat(received), false);
        if (answer) resolve(answer);
      });
      socket.once('close', () => {
        const answer = parseAnswer(Buffer.concat(received), true);
        if (answer) resolve(answer);
        else reject(new Error(`the connection closed without an answer (${Buffer.concat(received).length} bytes received)`));
      });
    });
    // Handled here: a test that expects the server to hang up must not fail on it.
    this.answer.catch(() => undefined);
    // Write errors after the server hung up (EPIPE, ECONNRESET) are expected; the answer tells.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve(performance.now())));
  }

  /**
   * Connects and sends the request line and headers of a POST with the client's key. Without a
   * `content-length` header the body is sent chunked.
   */
  static async post(target: { baseUrl: string; apiKey: string }, headers: Record<string, string>, path = '/conversions'): Promise<RawRequest> {
    const url = new URL(`${target.baseUrl}${path}`);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    const chunked = !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length');
    const all: Record<string, string> = {
      host: url.host,
      authorization: `Bearer ${target.apiKey}`,
      ...(chunked ? { 'transfer-encoding': 'chunked' } : {}),
      ...headers,
    };
    const head = `POST ${url.pathname} HTTP/1.1\r\n${Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
    const request = new RawRequest(socket, chunked);
    socket.write(head);
    return request;
  }

  /** Writes body bytes (framed when chunked); resolves once they are handed to the kernel, or the socket is gone. */
  write(data: Buffer | string): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.socket.destroyed) return Promise.resolve();
    this.sent += bytes.length;
    const framed = this.chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]) : bytes;
    return new Promise((resolve) => this.socket.write(framed, () => resolve()));
  }

  /** Ends a chunked body. */
  finish(): Promise<void> {
    if (this.socket.destroyed || !this.chunked) return Promise.resolve();
    return new Promise((resolve) => this.socket.write('0\r\n\r\n', () => resolve()));
  }

  /**
   * Writes `total` bytes of `fill` in pieces of `piece` as fast as the server takes them, stopping
   * early once an answer arrives or the connection is gone.
   */
  async stream(total: number, piece = 1024 * 1024, fill = 1): Promise<void> {
    const chunk = Buffer.alloc(piece, fill);
    let left = total;
    while (left > 0 && this.sentWhenAnswered < 0 && !this.socket.destroyed) {
      const bytes = Math.min(left, piece);
      await this.write(bytes === piece ? chunk : chunk.subarray(0, bytes));
      left -= bytes;
    }
  }

  /** Writes one byte every `everyMs` until `until` settles: a client that is slow, never silent. */
  trickle(everyMs: number, until: Promise<unknown>): Promise<void> {
    let done = false;
    const stop = () => {
      done = true;
    };
    until.then(stop, stop);
    return (async () => {
      while (!done && !this.socket.destroyed) {
        await this.write('x');
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    })();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
