/**
 * HTTP/1.1 on a raw keep-alive socket, for benches whose client shares the machine's cores with
 * the daemon it measures: node:http's client costs about as much CPU per request as a lean
 * server spends answering it, and that CPU would be counted against the server.
 */
import { connect, type Socket } from 'node:net';

const HEAD_END = Buffer.from('\r\n\r\n');

export interface ParsedResponse {
  status: number;
  /** Bytes of the whole response (head and body) at the start of the buffer. */
  length: number;
  bodyStart: number;
  bodyBytes: number;
  /** Body chunks of a chunked response (null for a Content-Length one: the body is in place). */
  chunks: Buffer[] | null;
}

/**
 * Parses one complete response at the start of `buffer`; null when more bytes are needed.
 * `collect`: gather a chunked body's chunks (the load generators only count the bytes).
 * Throws on a chunk size that is not hexadecimal: more bytes would never make it whole.
 */
export function parseResponse(buffer: Buffer, collect = false): ParsedResponse | null {
  const headEnd = buffer.indexOf(HEAD_END);
  if (headEnd === -1) return null;
  const head = buffer.toString('latin1', 0, headEnd);
  const status = Number(head.slice(9, 12));
  const bodyStart = headEnd + 4;
  // Chunked wins over a Content-Length sent beside it (RFC 9112 6.3).
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
    let position = bodyStart;
    let bodyBytes = 0;
    const chunks: Buffer[] | null = collect ? [] : null;
    for (;;) {
      const lineEnd = buffer.indexOf('\r\n', position, 'latin1');
      if (lineEnd === -1) return null;
      const sizeText = buffer.toString('latin1', position, lineEnd).split(';')[0]!.trim();
      if (!/^[0-9a-f]+$/i.test(sizeText)) throw new Error(`malformed chunk size ${JSON.stringify(sizeText.slice(0, 20))}`);
      const size = parseInt(sizeText, 16);
      if (size === 0) {
        // No trailers are sent by either server: the last chunk is `0\r\n\r\n`.
        return buffer.length >= lineEnd + 4 ? { status, length: lineEnd + 4, bodyStart, bodyBytes, chunks } : null;
      }
      if (buffer.length < lineEnd + 2 + size + 2) return null;
      chunks?.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
      bodyBytes += size;
      position = lineEnd + 2 + size + 2;
    }
  }
  const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!lengthMatch) return { status, length: bodyStart, bodyStart, bodyBytes: 0, chunks: null };
  const length = Number(lengthMatch[1]);
  return buffer.length >= bodyStart + length ? { status, length: bodyStart + length, bodyStart, bodyBytes: length, chunks: null } : null;
}

/**
 * The whole length (head and body) of a Content-Length response whose head is complete at the
 * start of `buffer`, or null (head incomplete, chunked, or no Content-Length).
 */
export function announcedLength(buffer: Buffer): number | null {
  const headEnd = buffer.indexOf(HEAD_END);
  if (headEnd === -1) return null;
  const head = buffer.toString('latin1', 0, headEnd);
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) return null;
  const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  return lengthMatch ? headEnd + 4 + Number(lengthMatch[1]) : null;
}

export interface WireAnswer {
  status: number;
  body: Buffer;
}

/**
 * One keep-alive connection that carries one request at a time. A connection the server closed
 * while idle (its keep-alive timeout, during a long baseline round) is opened again for the next
 * request; one closed while a request waits fails that request.
 */
export class WireConnection {
  private socket: Socket | null = null;
  private readonly hostHeader: string;
  private pending: Buffer = Buffer.alloc(0);
  /**
   * A large Content-Length body arrives in chunks, gathered here and joined once when all of it
   * is in: joining at every chunk copied a 700 KB download about six times over (the client's CPU
   * was counted against the server).
   */
  private parts: Buffer[] = [];
  private partsLength = 0;
  private needed = 0;
  private waiting: { resolve: (answer: WireAnswer) => void; reject: (error: Error) => void } | null = null;

  constructor(private readonly host: string, private readonly port: number) {
    this.hostHeader = `${host}:${port}`;
  }

  request(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<WireAnswer> {
    if (this.waiting) return Promise.reject(new Error('one request at a time on a WireConnection'));
    let head = `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    if (body) head += `Content-Length: ${body.length}\r\n`;
    head += '\r\n';
    const socket = this.socket ?? this.open();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      // Corked: head and body leave in one writev, without copying the body into a new buffer.
      socket.cork();
      socket.write(head, 'latin1');
      if (body) socket.write(body);
      socket.uncork();
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): Socket {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    this.pending = Buffer.alloc(0);
    this.parts = [];
    this.partsLength = 0;
    this.needed = 0;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.lost(socket, error));
    socket.on('close', () => this.lost(socket, new Error('connection closed by the server')));
    return socket;
  }

  private onData(chunk: Buffer): void {
    if (this.needed > 0) {
      this.parts.push(chunk);
      this.partsLength += chunk.length;
      if (this.partsLength < this.needed) return;
      this.pending = Buffer.concat(this.parts, this.partsLength);
      this.parts = [];
      this.partsLength = 0;
      this.needed = 0;
    } else {
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      const length = announcedLength(this.pending);
      if (length !== null && this.pending.length < length) {
        this.parts = [this.pending];
        this.partsLength = this.pending.length;
        this.needed = length;
        this.pending = Buffer.alloc(0);
        return;
      }
    }
    let response: ParsedResponse | null;
    try {
      response = parseResponse(this.pending, true);
    } catch (error) {
      this.socket?.destroy(error as Error);
      return;
    }
    if (!response) return;
    const body = response.chunks ? Buffer.concat(response.chunks) : Buffer.from(this.pending.subarray(response.bodyStart, response.length));
    this.pending = this.pending.subarray(response.length);
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) waiting.resolve({ status: response.status, body });
    else this.socket?.destroy(new Error(`an answer nobody asked for (${response.status})`));
  }

  private lost(socket: Socket, error: Error): void {
    if (this.socket !== socket) return;
    this.socket = null;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }
}
