import type { PublicConversion } from '../model/conversion.ts';
import type { AccountView } from '../model/account-view.ts';
import type { FormatDetails, FormatListing } from '../model/formats.ts';
import type { ListPage } from '../model/list-page.ts';
import type { Readable } from 'node:stream';

/** The API objects as the spec defines them (the CLI prints them unchanged with --json) live in model/. */
export type { AccountView } from '../model/account-view.ts';
export type { FormatDetails, FormatListing } from '../model/formats.ts';
export type { ListPage } from '../model/list-page.ts';

export type ConversionInputSpec =
  | { kind: 'file'; path: string; filename?: string }
  | { kind: 'stream'; stream: Readable; filename: string }
  | { kind: 'url'; url: string; filename?: string };

export interface CreateConversionRequest {
  input: ConversionInputSpec;
  /**
   * More files after `input`, merged with it into one PDF in this order (target pdf; at most 49
   * more): each is converted to PDF first where it is not one.
   */
  mergeWith?: { kind: 'file'; path: string; filename?: string }[];
  /**
   * Files sent beside the input that an option names by their file name (an image for
   * `watermark_image`): drawn on the result, not converted nor merged.
   */
  attachments?: { kind: 'file'; path: string; filename?: string }[];
  target: string;
  source?: string;
  variant?: string;
  options?: Record<string, string | number | boolean>;
  callbackUrl?: string;
  /** 0..30 seconds. */
  wait?: number;
  idempotencyKey?: string;
}

export interface DownloadResult {
  readonly stream: Readable;
  filename: string;
  size: number | null;
  /**
   * The result as a file on this machine that nothing reads after this download (in-process
   * runs): the caller's to take. Saving it to disk moves it into place (one rename, when on the
   * same file system) or else copies it by the kernel; `stream` is then never read.
   */
  localPath?: string;
}

/**
 * The one contract the CLI is written against: `HttpClient` reaches a convd over /v1,
 * `LocalClient` runs the same service in-process. Errors are thrown as `ClientError` with the
 * API's code and message.
 */
export interface ConvClient {
  createConversion(request: CreateConversionRequest): Promise<PublicConversion>;
  getConversion(id: string, options?: { wait?: number }): Promise<PublicConversion>;
  listConversions(query: { status?: string; cursor?: string; limit?: number }): Promise<ListPage>;
  deleteConversion(id: string): Promise<PublicConversion>;
  download(id: string): Promise<DownloadResult>;
  listFormats(): Promise<FormatListing>;
  getFormat(source: string): Promise<FormatDetails>;
  getAccount(): Promise<AccountView>;
  close(): Promise<void>;
}

export class ClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | null,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ClientError';
  }
}
