import type { HTTPResponse } from 'h3';
import { FastResponse } from 'srvx';
import { ApiError } from '../../src/errors/api-error.ts';
import { renderFieldMessage, renderMessage, type FieldReason, type Language } from '../../src/errors/messages.ts';

const kHeaders = Symbol('convd.plainHeaders');

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** A JSON answer whose headers are still a plain object (see `json`). */
export type JsonResponse = Response & { [kHeaders]: Record<string, string> };

/**
 * A JSON answer as srvx's FastResponse (the response class h3 itself builds on Node) with its
 * headers as a plain object: h3 passes such a response through untouched and srvx writes the string
 * in one go with a Content-Length, never building a `Headers` (whose per-header checks and sorted
 * iteration were the largest cost left in `npm run bench -- get-throughput` after the body itself).
 * A web Response with a string body would go through a ReadableStream and chunked encoding.
 */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): JsonResponse {
  const plain: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE, ...headers };
  const response = new FastResponse(JSON.stringify(body), { status, headers: plain }) as JsonResponse;
  response[kHeaders] = plain;
  return response;
}

/**
 * Adds headers to an answer: to the plain object of a `json` answer while it is not sent yet
 * (no `Headers` built), else through `response.headers`.
 */
export function addHeaders(response: Response | HTTPResponse, headers: Record<string, string>): void {
  const plain = (response as Partial<JsonResponse>)[kHeaders];
  if (plain) Object.assign(plain, headers);
  else for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
}

interface FieldProblemShape {
  reason: FieldReason;
  params?: Record<string, string | number>;
}

function isFieldProblem(value: unknown): value is FieldProblemShape {
  return typeof value === 'object' && value !== null && typeof (value as { reason?: unknown }).reason === 'string';
}

/** Field problems become `{reason, message}` with the message in the caller's language. */
function localizeDetails(details: Record<string, unknown> | undefined, language: Language): Record<string, unknown> | undefined {
  if (!details) return undefined;
  const fields = details.fields;
  if (typeof fields !== 'object' || fields === null) return details;
  const localized: Record<string, unknown> = {};
  for (const [name, problem] of Object.entries(fields)) {
    localized[name] = isFieldProblem(problem)
      ? { reason: problem.reason, message: renderFieldMessage(problem.reason, problem.params ?? {}, language) }
      : problem;
  }
  return { ...details, fields: localized };
}

/** Builds the hint of a validation message from its fields, e.g. " target: is required". */
function validationHint(details: Record<string, unknown> | undefined): string {
  const fields = details?.fields as Record<string, { message?: string }> | undefined;
  if (!fields) return '';
  return ` ${Object.entries(fields).map(([name, f]) => `${name}: ${f.message ?? ''}`).join('; ')}`;
}

/** An answer as plain parts, for a route served on node:http directly (see hot-read.ts). */
export interface PlainAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface ErrorEnvelope {
  status: number;
  body: { error: { code: string; message: string; details?: Record<string, unknown> } };
  headers: Record<string, string>;
}

function errorEnvelope(error: unknown, language: Language, extraHeaders: Record<string, string>): ErrorEnvelope {
  const apiError = error instanceof ApiError ? error : new ApiError('internal_error');
  const details = localizeDetails(apiError.details, language);
  const params = { ...apiError.params };
  if (apiError.code === 'validation_failed' && params.hint === undefined) params.hint = validationHint(details);
  const body: ErrorEnvelope['body'] = {
    error: { code: apiError.code, message: renderMessage(apiError.code, params, language) },
  };
  if (details) body.error.details = details;
  return { status: apiError.status, body, headers: { 'content-language': language, ...extraHeaders, ...apiError.headers } };
}

/** The one error shape: `{ error: { code, message, details? } }`, nothing else in the body. */
export function errorResponse(error: unknown, language: Language, extraHeaders: Record<string, string> = {}): JsonResponse {
  const { status, body, headers } = errorEnvelope(error, language, extraHeaders);
  return json(status, body, headers);
}

/** `errorResponse` as plain parts, byte for byte the same answer. */
export function errorAnswer(error: unknown, language: Language, extraHeaders: Record<string, string> = {}): PlainAnswer {
  const { status, body, headers } = errorEnvelope(error, language, extraHeaders);
  // Names in lower case, as srvx writes them on the h3 path (`Retry-After` -> `retry-after`).
  const lower: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE };
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return { status, headers: lower, body: JSON.stringify(body) };
}
