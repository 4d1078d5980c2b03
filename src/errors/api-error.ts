import { ERROR_STATUS, type ApiErrorCode } from './codes.ts';

export type ErrorDetails = Record<string, unknown>;
/** Values substituted into the localized message template of the code. */
export type MessageParams = Record<string, string | number>;

/** An error that the interface answers with: one code, its status, optional details and message values. */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly status: number;
  readonly details: ErrorDetails | undefined;
  readonly params: MessageParams;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Record<string, string>;

  constructor(
    code: ApiErrorCode,
    options: { details?: ErrorDetails; params?: MessageParams; headers?: Record<string, string> } = {},
  ) {
    super(code);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.params = options.params ?? {};
    this.headers = options.headers ?? {};
  }
}

/** A conversion that ended in failure carries one of these, never an ApiError. */
/**
 * An engine cannot make this file faithfully, and says so before it writes anything: where another
 * engine serves the pair as its fallback (ConversionPair.fallback), that one converts it; where
 * none does, the conversion fails `input_invalid` with this message. An engine whose own result
 * stands where no fallback is there (PDF text where no OCR engine reads the scans) writes it first
 * and names its size in `kept`.
 */
export class HandOver extends Error {
  constructor(message: string, readonly kept?: { size: number }) {
    super(message);
    this.name = 'HandOver';
  }
}

export class ConversionFailure extends Error {
  /** `details`: figures a client can act on (e.g. an image's size and the pixel limit), beside the words. */
  constructor(readonly code: import('./codes.ts').ConversionErrorCode, message: string, readonly details?: Readonly<Record<string, number | string>>) {
    super(message);
    this.name = 'ConversionFailure';
  }
}
