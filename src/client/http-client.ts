import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import got, { RequestError, type Got, type Method, type Response } from 'got';
import type { PublicConversion } from '../model/conversion.ts';
import { normalizeBaseUrl } from './base-url.ts';
import { filenameFromContentDisposition } from './content-disposition.ts';
import { MultipartForm, StreamedFile } from './multipart.ts';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelay, type AttemptFailure, type RetryClass, type RetryPolicy } from './retry.ts';
import {
  ClientError,
  type AccountView,
  type ConvClient,
  type CreateConversionRequest,
  type DownloadResult,
  type FormatDetails,
  type FormatListing,
  type ListPage,
} from './types.ts';

export { normalizeBaseUrl };

export interface HttpClientOptions {
  /** The service's base address; it ends in `/v1` (a bare origin gets `/v1` appended). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  userAgent?: string;
  /** Language of the API's error messages (`Accept-Language`). */
  acceptLanguage?: string;
  retry?: Partial<RetryPolicy>;
  /** Time to establish a connection (DNS, TCP, TLS), each. Default 10 s. */
  connectTimeoutMs?: number;
  /**
   * Time from the request being written to the response headers, on top of any `wait` the
   * request asks for. Default 60 s. Uploads themselves have no time limit.
   */
  responseTimeoutMs?: number;
}

interface RequestSpec {
  method: Method;
  path: string;
  retryClass: RetryClass;
  searchParams?: Record<string, string | number>;
  json?: unknown;
  /** Called once per attempt, so a file upload is re-read from disk on a retry. */
  body?: () => MultipartForm;
  headers?: Record<string, string>;
  /** Seconds the server may hold the request (`wait`), added to the response time limit. */
  waitSeconds?: number;
}

function isErrorBody(value: unknown): value is { error: { code: string; message: string; details?: Record<string, unknown> } } {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const error = (value as { error: unknown }).error;
  return (
    typeof error === 'object' && error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

/** Codes for error answers that did not come from the API itself (a proxy, a wrong URL). */
const CODE_FOR_STATUS: Record<number, string> = {
  401: 'unauthenticated', 403: 'forbidden', 404: 'not_found', 413: 'file_too_large', 429: 'rate_limited',
};

function errorFromAnswer(status: number, statusMessage: string | undefined, body: string): ClientError {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isErrorBody(parsed)) {
      const details = parsed.error.details;
      return new ClientError(
        parsed.error.code, parsed.error.message, status,
        typeof details === 'object' && details !== null ? details : undefined,
      );
    }
  } catch {
    // Not JSON: described below from the status alone.
  }
  const reason = statusMessage ? ` ${statusMessage}` : '';
  return new ClientError(CODE_FOR_STATUS[status] ?? 'http_error', `the server answered HTTP ${status}${reason}`, status);
}

async function readText(stream: NodeJS.ReadableStream, limit = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    // An error body is small; a huge one is not an API error and need not be kept.
    if (size < limit) chunks.push(buffer);
    size += buffer.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The `ConvClient` over HTTP: any convd (or compatible service) reached at its /v1 base URL. */
export class HttpClient implements ConvClient {
  readonly baseUrl: string;
  private readonly http: Got;
  private readonly policy: RetryPolicy;
  private readonly agents = {
    http: new http.Agent({ keepAlive: true }),
    https: new https.Agent({ keepAlive: true }),
  };
  private readonly connectTimeoutMs: number;
  private readonly responseTimeoutMs: number;

  constructor(options: HttpClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.responseTimeoutMs = options.responseTimeoutMs ?? 60_000;
    const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'conv' };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    if (options.acceptLanguage) headers['accept-language'] = options.acceptLanguage;
    this.http = got.extend({
      prefixUrl: `${this.baseUrl}/`,
      headers,
      agent: this.agents,
      // Retries are ours (retry.ts): got cannot re-send a streamed multipart body, and it
      // would retry a POST without knowing an Idempotency-Key makes it safe.
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: true,
    });
  }

  async createConversion(request: CreateConversionRequest): Promise<PublicConversion> {
    // One key for every attempt of this call: a repeat after a lost answer returns the original.
    const headers = { 'idempotency-key': request.idempotencyKey ?? randomUUID() };
    const { input } = request;
    if (input.kind === 'url') {
      const json = {
        url: input.url,
        target: request.target,
        ...(input.filename !== undefined && { filename: input.filename }),
        ...this.commonFields(request),
        ...(request.options && { options: request.options }),
      };
      return this.call<PublicConversion>({ method: 'POST', path: 'conversions', json, headers, retryClass: 'safe', waitSeconds: request.wait });
    }

    let file: () => StreamedFile;
    let retryClass: RetryClass;
    if (input.kind === 'file') {
      let size: number;
      try {
        size = (await stat(input.path)).size;
      } catch (error) {
        throw new ClientError('input_unreadable', `cannot read ${input.path}: ${(error as Error).message}`, null);
      }
      const name = input.filename ?? basename(input.path);
      file = () => StreamedFile.fromPath(input.path, name, size);
      retryClass = 'safe';
    } else {
      // A pipe is read once: the request cannot be repeated, whatever the key.
      file = () => new StreamedFile(input.filename, Number.NaN, () => input.stream);
      retryClass = 'once';
    }
    const more = await Promise.all([...(request.mergeWith ?? []), ...(request.attachments ?? [])].map(async (other) => {
      const size = await stat(other.path).then((info) => info.size, (error: Error) => {
        throw new ClientError('input_unreadable', `cannot read ${other.path}: ${error.message}`, null);
      });
      return () => StreamedFile.fromPath(other.path, other.filename ?? basename(other.path), size);
    }));
    const body = (): MultipartForm => {
      const form = new MultipartForm();
      form.append('target', request.target);
      for (const [name, value] of Object.entries(this.commonFields(request))) form.append(name, value);
      for (const [name, value] of Object.entries(request.options ?? {})) form.append(`options[${name}]`, value);
      // The files go last, so the server has every field before it starts spooling the upload;
      // a merge's in its order, then those an option names.
      form.append('file', file());
      for (const other of more) form.append('file', other());
      return form;
    };
    return this.call<PublicConversion>({ method: 'POST', path: 'conversions', body, headers, retryClass, waitSeconds: request.wait });
  }

  getConversion(id: string, options: { wait?: number } = {}): Promise<PublicConversion> {
    const searchParams = options.wait !== undefined ? { wait: options.wait } : undefined;
    return this.call({ method: 'GET', path: `conversions/${encodeURIComponent(id)}`, searchParams, retryClass: 'safe', waitSeconds: options.wait });
  }

  listConversions(query: { status?: string; cursor?: string; limit?: number }): Promise<ListPage> {
    const searchParams: Record<string, string | number> = {};
    if (query.status !== undefined) searchParams.status = query.status;
    if (query.cursor !== undefined) searchParams.cursor = query.cursor;
    if (query.limit !== undefined) searchParams.limit = query.limit;
    return this.call({ method: 'GET', path: 'conversions', searchParams, retryClass: 'safe' });
  }

  deleteConversion(id: string): Promise<PublicConversion> {
    return this.call({ method: 'DELETE', path: `conversions/${encodeURIComponent(id)}`, retryClass: 'unsafe' });
  }

  listFormats(): Promise<FormatListing> {
    return this.call({ method: 'GET', path: 'formats', retryClass: 'safe' });
  }

  getFormat(source: string): Promise<FormatDetails> {
    return this.call({ method: 'GET', path: `formats/${encodeURIComponent(source)}`, retryClass: 'safe' });
  }

  getAccount(): Promise<AccountView> {
    return this.call({ method: 'GET', path: 'account', retryClass: 'safe' });
  }

  /**
   * Streams the result. Retries happen only until the answer's headers arrive; once the body
   * flows, an interruption surfaces as an error on the stream (nothing is resumed).
   */
  async download(id: string): Promise<DownloadResult> {
    const path = `conversions/${encodeURIComponent(id)}/download`;
    return this.withRetries<DownloadResult>('safe', async () => {
      // No content coding: the bytes written are the file, and Content-Length is its size.
      const stream = this.http.stream(path, {
        decompress: false,
        headers: { 'accept-encoding': 'identity' },
        timeout: this.timeouts(0),
      });
      let response: Response;
      try {
        response = await new Promise<Response>((resolve, reject) => {
          stream.once('response', resolve);
          stream.once('error', reject);
        });
      } finally {
        stream.removeAllListeners('error');
      }
      if (response.statusCode >= 400) {
        const text = await readText(stream).catch(() => '');
        return { failure: this.statusFailure(response), error: errorFromAnswer(response.statusCode, response.statusMessage, text) };
      }
      const length = Number(response.headers['content-length']);
      const filename = filenameFromContentDisposition(response.headers['content-disposition']) ?? `${id}.bin`;
      return { value: { stream, filename, size: Number.isFinite(length) ? length : null } };
    });
  }

  async close(): Promise<void> {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private commonFields(request: CreateConversionRequest): Record<string, string | number> {
    const fields: Record<string, string | number> = {};
    if (request.source !== undefined) fields.source = request.source;
    if (request.variant !== undefined) fields.variant = request.variant;
    if (request.callbackUrl !== undefined) fields.callback_url = request.callbackUrl;
    if (request.wait !== undefined) fields.wait = request.wait;
    return fields;
  }

  private timeouts(waitSeconds: number): { lookup: number; connect: number; secureConnect: number; response: number } {
    const connect = this.connectTimeoutMs;
    return { lookup: connect, connect, secureConnect: connect, response: this.responseTimeoutMs + waitSeconds * 1000 };
  }

  private statusFailure(response: Response): AttemptFailure {
    return { kind: 'status', status: response.statusCode, retryAfterMs: parseRetryAfter(response.headers['retry-after']) };
  }

  private async call<T>(spec: RequestSpec): Promise<T> {
    return this.withRetries<T>(spec.retryClass, async () => {
      const response = await this.http(spec.path, {
        method: spec.method,
        headers: { accept: 'application/json', ...spec.headers },
        ...(spec.searchParams && { searchParams: spec.searchParams }),
        ...(spec.json !== undefined && { json: spec.json }),
        ...(spec.body && { body: spec.body() }),
        responseType: 'text',
        timeout: this.timeouts(spec.waitSeconds ?? 0),
      });
      if (response.statusCode >= 400) {
        return { failure: this.statusFailure(response), error: errorFromAnswer(response.statusCode, response.statusMessage, response.body) };
      }
      try {
        return { value: JSON.parse(response.body) as T };
      } catch {
        throw new ClientError('invalid_response', `the server's answer to ${spec.method} /${spec.path} is not JSON`, response.statusCode);
      }
    });
  }

  /**
   * Runs `attempt` until it yields a value or a failure that `retry.ts` says not to repeat.
   * Network errors (got's RequestError) become `network_error`.
   */
  private async withRetries<T>(
    retryClass: RetryClass,
    attempt: () => Promise<{ value: T } | { failure: AttemptFailure; error: ClientError }>,
  ): Promise<T> {
    for (let count = 1; ; count += 1) {
      let failure: AttemptFailure;
      let error: ClientError;
      try {
        const outcome = await attempt();
        if ('value' in outcome) return outcome.value;
        ({ failure, error } = outcome);
      } catch (thrown) {
        if (!(thrown instanceof RequestError)) throw thrown;
        failure = { kind: 'network', code: thrown.code };
        error = new ClientError('network_error', `cannot reach ${this.baseUrl}: ${thrown.message}`, null, { cause: thrown.code });
      }
      const delay = retryDelay(failure, retryClass, count, this.policy);
      if (delay === null) throw error;
      await sleep(delay);
    }
  }
}
