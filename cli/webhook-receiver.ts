import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, type VerifyFailureReason } from '../src/webhooks/index.ts';
import { WEBHOOK_REJECTIONS } from './webhook-reasons.ts';

/**
 * The HTTP side of `conv webhook listen`: a server on 127.0.0.1 that checks every POST the way a
 * receiver should (spec section 6), answers, and reports what it saw. Knows nothing of the
 * terminal: the command prints the reports.
 */

export interface ReceiverOptions {
  port: number;
  secret: string;
  toleranceSeconds: number;
  /** Valid deliveries are passed on to this URL, raw body and service headers unchanged. */
  forward?: string;
  forwardTimeoutMs?: number;
}

export type ForwardOutcome = { status: number } | { error: string };

export type DeliveryReport =
  | {
    valid: true;
    delivery: string | null;
    event: string | null;
    timestamp: number;
    /** The body as parsed JSON (the webhook payload: {event, data}). */
    body: unknown;
    /** Seen before: the sender retried (same X-Service-Delivery id). */
    repeat: boolean;
    forward?: ForwardOutcome;
  }
  | {
    valid: false;
    delivery: string | null;
    event: string | null;
    reason: VerifyFailureReason | 'malformed_body' | 'body_too_large';
    message: string;
    remote: string;
  };

export interface Receiver {
  url: string;
  close(): Promise<void>;
}

/** Webhook bodies are one conversion object: anything near this size is not a delivery (1 MiB). */
const MAX_BODY_BYTES = 1024 * 1024;
const SEEN_LIMIT = 10_000;
/** Headers a delivery carries that the forward target needs to verify it the same way. */
const FORWARDED_HEADERS = ['content-type', 'x-service-event', 'x-service-delivery', 'x-service-signature', 'user-agent'];

function header(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? value[0] ?? null : null;
}

async function readBody(request: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/**
 * Passes a verified delivery on and relays the answer, so the sender's retries see the forward
 * target's verdict exactly as if it had delivered there itself.
 */
async function forwardDelivery(
  target: string,
  request: IncomingMessage,
  raw: Buffer,
  timeoutMs: number,
  response: ServerResponse,
): Promise<ForwardOutcome> {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = header(request, name);
    if (value !== null) headers[name] = value;
  }
  try {
    const reply = await fetch(target, { method: 'POST', headers, body: raw, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    const body = Buffer.from(await reply.arrayBuffer());
    response.writeHead(reply.status, { 'content-type': reply.headers.get('content-type') ?? 'application/octet-stream', 'content-length': body.length });
    response.end(body);
    return { status: reply.status };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const message = (error as Error).name === 'TimeoutError'
      ? `no answer within ${timeoutMs / 1000} s`
      : cause?.code ?? cause?.message ?? (error as Error).message;
    answer(response, 502, { error: { code: 'forward_failed', message: `${target}: ${message}` } });
    return { error: message };
  }
}

export async function startWebhookReceiver(options: ReceiverOptions, report: (delivery: DeliveryReport) => void): Promise<Receiver> {
  const seen = new Set<string>();
  const remember = (id: string | null): boolean => {
    if (id === null) return false;
    if (seen.has(id)) return true;
    if (seen.size >= SEEN_LIMIT) seen.delete(seen.values().next().value!);
    seen.add(id);
    return false;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST');
      return answer(response, 405, { error: { code: 'method_not_allowed', message: 'webhook deliveries are POST requests' } });
    }
    const delivery = header(request, 'x-service-delivery');
    const event = header(request, 'x-service-event');
    const reject = (reason: Extract<DeliveryReport, { valid: false }>['reason'], status = 400) => {
      const message = WEBHOOK_REJECTIONS[reason] ?? reason;
      report({ valid: false, delivery, event, reason, message, remote: request.socket.remoteAddress ?? '?' });
      answer(response, status, { error: { code: reason, message } });
    };
    const raw = await readBody(request);
    if (raw === null) {
      // Answer before the rest arrives, and close: the sender need not upload it all.
      response.setHeader('connection', 'close');
      return reject('body_too_large', 413);
    }
    const verdict = verifyWebhook(raw, header(request, 'x-service-signature'), options.secret, { toleranceSeconds: options.toleranceSeconds });
    if (!verdict.ok) return reject(verdict.reason);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return reject('malformed_body');
    }
    const repeat = remember(delivery);
    if (!options.forward) {
      answer(response, 200, { received: true });
      return report({ valid: true, delivery, event, timestamp: verdict.timestamp, body, repeat });
    }
    const forward = await forwardDelivery(options.forward, request, raw, options.forwardTimeoutMs ?? 10_000, response);
    report({ valid: true, delivery, event, timestamp: verdict.timestamp, body, repeat, forward });
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) answer(response, 500, { error: { code: 'internal_error', message: String(error) } });
      else response.destroy();
    });
  });
  // A delivery is one small request: slow or idle clients must not hold the receiver.
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    }),
  };
}
