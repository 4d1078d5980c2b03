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

/** Parses one complete response at the start of `buffer`; null when more bytes are needed. */
export function parseResponse(buffer: Buffer): ParsedResponse | null {
  const headEnd = buffer.indexOf(HEAD_END);
  if (headEnd === -1) return null;
  const head = buffer.toString('latin1', 0, headEnd);
  const status = Number(head.slice(9, 12));
  const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  const bodyStart = headEnd + 4;
  if (lengthMatch) {
    const length = Number(lengthMatch[1]);
    return buffer.length >= bodyStart + length ? { status, length: bodyStart + length, bodyStart, bodyBytes: length, chunks: null } : null;
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return { status, length: bodyStart, bodyStart, bodyBytes: 0, chunks: null };
  let position = bodyStart;
  let bodyBytes = 0;
  const chunks: Buffer[] = [];
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', position, 'latin1');
    if (lineEnd === -1) return null;
    const size = parseInt(buffer.toString('latin1', position, lineEnd), 16);
    if (size === 0) {
      // No trailers are sent by either server: the last chunk is `0\r\n\r\n`.
      return buffer.length >= lineEnd + 4 ? { status, length: lineEnd + 4, bodyStart, bodyBytes, chunks } : null;
    }
    if (buffer.length < lineEnd + 2 + size + 2) return null;
    chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
    bodyBytes += size;
    position = lineEnd + 2 + size + 2;
  }
}

export interface WireAnswer {
  status: number;
  body: Buffer;
}

/** One keep-alive connection that carries one request at a time. */
export class WireConnection {
  private readonly socket: Socket;
  private readonly hostHeader: string;
  private pending: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (answer: WireAnswer) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(host: string, port: number) {
    this.hostHeader = `${host}:${port}`;
    this.socket = connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('close', () => this.fail(new Error('connection closed by the server')));
  }

  request(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<WireAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.waiting) return Promise.reject(new Error('one request at a time on a WireConnection'));
    let head = `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    if (body) head += `Content-Length: ${body.length}\r\n`;
    head += '\r\n';
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      // Corked: head and body leave in one writev, without copying the body into a new buffer.
      this.socket.cork();
      this.socket.write(head, 'latin1');
      if (body) this.socket.write(body);
      this.socket.uncork();
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const response = parseResponse(this.pending);
    if (!response) return;
    const body = response.chunks ? Buffer.concat(response.chunks) : Buffer.from(this.pending.subarray(response.bodyStart, response.length));
    this.pending = this.pending.subarray(response.length);
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) waiting.resolve({ status: response.status, body });
    else this.fail(new Error(`an answer nobody asked for (${response.status})`));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }
}
