/**
 * The package's client for Node (`import { ConvdClient } from 'convd/client'`): a convd (or any
 * service with this interface) over HTTP, typed. Submitting, merging, waiting and downloading are
 * each one call; retries are safe (every submission carries an Idempotency-Key); errors are
 * `ClientError` with the API's code. Webhook receivers verify with `verifyWebhook`.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PublicConversion } from '../model/conversion.ts';
import { HttpClient, type HttpClientOptions } from './http-client.ts';
import { ClientError, type DownloadResult } from './types.ts';

export { HttpClient, type HttpClientOptions } from './http-client.ts';
export {
  ClientError,
  type AccountView,
  type ConversionInputSpec,
  type ConvClient,
  type CreateConversionRequest,
  type DownloadResult,
  type FormatDetails,
  type FormatListing,
  type ListPage,
} from './types.ts';
export type { ConversionInputFile, ConversionWarning, PublicConversion } from '../model/conversion.ts';
export type { ConversionStatus } from '../model/status.ts';
export { verifyWebhook, type VerifyOptions, type VerifyResult } from '../webhooks/index.ts';

/** An input: a file on this machine, a stream with the name it should have, or a URL the server fetches. */
export type ConvertInput = string | { path: string; filename?: string } | { stream: Readable; filename: string } | { url: string; filename?: string };

export interface ConvertOptions {
  /** Conversion options by name (`quality: 80`, `watermark_text: 'DRAFT'`), as `GET /v1/formats/{source}` lists them. */
  options?: Record<string, string | number | boolean>;
  variant?: string;
  /** Source format, when the name does not tell it. */
  source?: string;
  callbackUrl?: string;
  idempotencyKey?: string;
  /** Seconds (0..30) the server may hold the submission for the conversion to end. */
  wait?: number;
  /**
   * Files an option names by their file name, sent beside the input: `{ options: {
   * watermark_image: 'logo.png' }, attachments: ['./art/logo.png'] }`.
   */
  attachments?: readonly (string | { path: string; filename?: string })[];
}

/** A file on this machine as the request takes it: a path, or a path with the name to send. */
const fileSpec = (file: string | { path: string; filename?: string }) => (typeof file === 'string' ? { kind: 'file' as const, path: file } : { kind: 'file' as const, ...file });

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

function inputSpec(input: ConvertInput) {
  if (typeof input === 'string') return { kind: 'file' as const, path: input };
  if ('path' in input) return { kind: 'file' as const, path: input.path, ...(input.filename !== undefined && { filename: input.filename }) };
  if ('stream' in input) return { kind: 'stream' as const, stream: input.stream, filename: input.filename };
  return { kind: 'url' as const, url: input.url, ...(input.filename !== undefined && { filename: input.filename }) };
}

export class ConvdClient extends HttpClient {
  constructor(options: HttpClientOptions) {
    super({ userAgent: 'convd-client', ...options });
  }

  /** Submits one conversion; resolves with it as the server answered (queued, or ended within `wait`). */
  convert(input: ConvertInput, target: string, options: ConvertOptions = {}): Promise<PublicConversion> {
    return this.createConversion({
      input: inputSpec(input), target,
      ...(options.attachments?.length && { attachments: options.attachments.map(fileSpec) }),
      ...(options.options && { options: options.options }),
      ...(options.variant !== undefined && { variant: options.variant }),
      ...(options.source !== undefined && { source: options.source }),
      ...(options.callbackUrl !== undefined && { callbackUrl: options.callbackUrl }),
      ...(options.idempotencyKey !== undefined && { idempotencyKey: options.idempotencyKey }),
      ...(options.wait !== undefined && { wait: options.wait }),
    });
  }

  /** Merges files (two to 50, any that convert to PDF) into one PDF, in this order: one conversion. */
  merge(files: readonly (string | { path: string; filename?: string })[], options: Omit<ConvertOptions, 'source'> = {}): Promise<PublicConversion> {
    if (files.length < 2) return Promise.reject(new ClientError('validation_failed', 'a merge takes at least two files', null));
    const [first, ...rest] = files.map(fileSpec);
    return this.createConversion({
      input: first!, mergeWith: rest, target: 'pdf',
      ...(options.attachments?.length && { attachments: options.attachments.map(fileSpec) }),
      ...(options.options && { options: options.options }),
      ...(options.variant !== undefined && { variant: options.variant }),
      ...(options.callbackUrl !== undefined && { callbackUrl: options.callbackUrl }),
      ...(options.idempotencyKey !== undefined && { idempotencyKey: options.idempotencyKey }),
      ...(options.wait !== undefined && { wait: options.wait }),
    });
  }

  /**
   * Waits for the conversion's end state (succeeded, failed, cancelled, expired), asking the
   * server to hold each request up to 30 s. Past `timeoutSeconds` it rejects with
   * ClientError('wait_timeout'); the conversion goes on.
   */
  async wait(conversion: string | PublicConversion, options: { timeoutSeconds?: number } = {}): Promise<PublicConversion> {
    let current = typeof conversion === 'string' ? await this.getConversion(conversion) : conversion;
    const deadline = Date.now() + (options.timeoutSeconds ?? Infinity) * 1000;
    while (!ENDED.has(current.status)) {
      const left = Math.floor((deadline - Date.now()) / 1000);
      if (left <= 0) throw new ClientError('wait_timeout', `${current.id} is still ${current.status}`, null);
      current = await this.getConversion(current.id, { wait: Math.min(30, left) });
    }
    return current;
  }

  /**
   * Downloads a result to `path` (written under a temporary name, renamed when complete), or
   * returns the download's stream when no path is given.
   */
  downloadTo(id: string, path: string): Promise<string>;
  downloadTo(id: string): Promise<DownloadResult>;
  async downloadTo(id: string, path?: string): Promise<string | DownloadResult> {
    const download = await this.download(id);
    if (path === undefined) return download;
    const temp = `${path}.${process.pid}.part`;
    try {
      await pipeline(download.stream, createWriteStream(temp));
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    return path;
  }

  /** Submit, wait for the end, download to `output`: the conversion, ended (a failure rejects with its code). */
  async convertFile(input: ConvertInput, target: string, output: string, options: ConvertOptions & { timeoutSeconds?: number } = {}): Promise<PublicConversion> {
    const ended = await this.wait(await this.convert(input, target, options), { timeoutSeconds: options.timeoutSeconds });
    if (ended.status !== 'succeeded') {
      throw new ClientError(ended.error?.code ?? ended.status, ended.error?.message ?? `the conversion was ${ended.status}`, null);
    }
    await this.downloadTo(ended.id, output);
    return ended;
  }
}
