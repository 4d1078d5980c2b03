/** A lean HTTP client for the benches: node:http with keep-alive, whole answers as Buffers. */
import { Agent, request } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function send(
  base: { host: string; port: number },
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | Readable,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: base.host, port: base.port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (Buffer.isBuffer(body)) req.end(body);
    else body.pipe(req);
  });
}

export function json<T>(answer: { body: Buffer }): T {
  return JSON.parse(answer.body.toString('utf8')) as T;
}

export interface Multipart {
  contentType: string;
  /** The bytes before the file content and after it; the file goes in between. */
  head: Buffer;
  tail: Buffer;
}

/** multipart/form-data framing around one `file` part, so a body can be a Buffer or a stream. */
export function multipartFrame(fields: Record<string, string>, fileName: string, fileType: string): Multipart {
  const boundary = `----convd-bench-${randomBytes(12).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: ${fileType}\r\n\r\n`;
  return { contentType: `multipart/form-data; boundary=${boundary}`, head: Buffer.from(head), tail: Buffer.from(`\r\n--${boundary}--\r\n`) };
}

export function multipartBody(fields: Record<string, string>, fileName: string, fileType: string, data: Buffer): { contentType: string; body: Buffer } {
  const frame = multipartFrame(fields, fileName, fileType);
  return { contentType: frame.contentType, body: Buffer.concat([frame.head, data, frame.tail]) };
}

/** A file part of multipartFiles. */
export interface FilePart {
  name: string;
  type: string;
  data: Buffer;
}

/** multipart/form-data with the fields, then one `file` part per file in the order given (a merge's inputs). */
export function multipartFiles(fields: Record<string, string>, files: readonly FilePart[]): { contentType: string; body: Buffer } {
  const boundary = `----convd-bench-${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const file of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), file.data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(parts) };
}
