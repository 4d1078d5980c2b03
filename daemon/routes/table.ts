import type { ApiErrorCode } from '../../src/errors/codes.ts';
import type { Scope } from '../../src/model/account.ts';
import { STATUSES } from '../../src/model/status.ts';
import type { JsonSchema, SchemaName } from '../openapi/schemas.ts';

export interface ParameterDoc {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description: string;
  schema: JsonSchema;
}

/** Response headers described once in the document's components. */
export type HeaderName = 'Location' | 'RateLimit-Limit' | 'RateLimit-Remaining' | 'RateLimit-Reset' | 'Retry-After' | 'Content-Disposition' | 'Content-Range' | 'Content-Language';

export interface ResponseDoc {
  description: string;
  /** A JSON body of this schema. */
  schema?: SchemaName;
  /** A binary body (application/octet-stream). */
  binary?: boolean;
  headers?: readonly HeaderName[];
}

/**
 * One operation of the interface: what the daemon registers on h3 (method, path, scope) and
 * what the OpenAPI document says of it come from the same entry.
 */
export interface RouteDoc {
  method: 'GET' | 'POST' | 'DELETE';
  /** h3 pattern (`:id`); the document writes `{id}`, relative to the /v1 server. */
  path: `/v1/${string}`;
  operationId: string;
  summary: string;
  description?: string;
  tag: 'Conversions' | 'Formats' | 'Account' | 'Interface';
  /** The API-key scope needed; null: no key, no rate limit, no maintenance switch. */
  scope: Scope | null;
  parameters?: readonly ParameterDoc[];
  requestBody?: { schema: SchemaName; contentTypes: readonly string[]; description: string };
  responses: Partial<Record<200 | 202 | 206, ResponseDoc>>;
  /** Codes this operation answers with besides those every authenticated operation can give. */
  errors: readonly ApiErrorCode[];
}

/** What any operation that needs a key can answer. */
export const COMMON_ERRORS: readonly ApiErrorCode[] = ['unauthenticated', 'forbidden', 'rate_limited', 'api_disabled', 'internal_error'];

const idParameter: ParameterDoc = { name: 'id', in: 'path', required: true, description: 'Conversion id (`cnv_...`).', schema: { type: 'string' } };

const create = {
  method: 'POST',
  scope: 'convert',
  summary: 'Start a conversion',
  description: 'Submits one input (an uploaded file or a URL) with a target format. Answers 202 with the conversion and its address in `Location`, or 200 when it ended within `wait` seconds. An upload is checked against the plan (concurrent conversions, uploads in flight included; conversions per window; credits, estimated from Content-Length) and the server\'s free disk space before a byte of its body is read. A body that sends nothing for a while, or takes too long as a whole, is ended with 408 `request_timeout`.',
  tag: 'Conversions',
  parameters: [{
    name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 64 },
    description: 'Repeating a request with the same key (within 24 h) returns the original conversion and starts and charges nothing new.',
  }],
  requestBody: {
    schema: 'ConversionRequest',
    contentTypes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
    description: 'The conversion request; `file` only in multipart/form-data.',
  },
  responses: {
    200: { description: 'The conversion ended within `wait`.', schema: 'Conversion' },
    202: { description: 'Accepted; poll `Location`.', schema: 'Conversion', headers: ['Location'] },
  },
  errors: ['validation_failed', 'unsupported_conversion', 'file_too_large', 'insufficient_credits', 'free_quota_exhausted', 'concurrency_limit', 'engine_time_exhausted', 'idempotency_conflict', 'request_timeout'],
} as const;

export const ROUTES = [
  { ...create, path: '/v1/conversions', operationId: 'createConversion' },
  { ...create, path: '/v1/convert', operationId: 'convert', summary: 'Start a conversion (alias of POST /conversions)' },
  {
    method: 'GET', path: '/v1/conversions', operationId: 'listConversions', scope: 'read', tag: 'Conversions',
    summary: "List the caller's conversions, newest first",
    parameters: [
      { name: 'status', in: 'query', required: false, description: 'Only conversions in this state.', schema: { type: 'string', enum: [...STATUSES] } },
      { name: 'cursor', in: 'query', required: false, description: '`next_cursor` of the previous page.', schema: { type: 'string' } },
      { name: 'limit', in: 'query', required: false, description: 'Page size (default 20).', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    ],
    responses: { 200: { description: 'A page of conversions.', schema: 'ListPage' } },
    errors: ['validation_failed'],
  },
  {
    method: 'GET', path: '/v1/conversions/:id', operationId: 'getConversion', scope: 'read', tag: 'Conversions',
    summary: 'Get a conversion',
    parameters: [
      idParameter,
      { name: 'wait', in: 'query', required: false, description: 'Seconds (0 to 30) to wait for an end state before answering.', schema: { type: 'integer', minimum: 0, maximum: 30 } },
    ],
    responses: { 200: { description: 'The conversion, with its result once it succeeded.', schema: 'Conversion' } },
    errors: ['not_found', 'validation_failed'],
  },
  {
    method: 'DELETE', path: '/v1/conversions/:id', operationId: 'deleteConversion', scope: 'delete', tag: 'Conversions',
    summary: 'Cancel a conversion or delete its result',
    description: 'Queued, fetching or processing: cancelled. Succeeded: the result is deleted, the status becomes `expired` and `result.expires_at` the time of the deletion (the download answers 410 `expired`, as for a result that ran out). Otherwise 409 `invalid_state`.',
    parameters: [idParameter],
    responses: { 200: { description: 'The conversion after the change.', schema: 'Conversion' } },
    errors: ['not_found', 'invalid_state'],
  },
  {
    method: 'GET', path: '/v1/conversions/:id/download', operationId: 'downloadResult', scope: 'read', tag: 'Conversions',
    summary: 'Download the result',
    description: 'The converted file, repeatable until `result.expires_at`. `Range` requests are honoured.',
    parameters: [
      idParameter,
      { name: 'Range', in: 'header', required: false, description: 'One byte range, e.g. `bytes=0-1023`.', schema: { type: 'string' } },
    ],
    responses: {
      200: { description: 'The file.', binary: true, headers: ['Content-Disposition'] },
      206: { description: 'The requested range of the file.', binary: true, headers: ['Content-Disposition', 'Content-Range'] },
    },
    errors: ['not_found', 'not_ready', 'expired'],
  },
  {
    method: 'GET', path: '/v1/formats', operationId: 'listFormats', scope: 'read', tag: 'Formats',
    summary: 'List source formats and their targets',
    responses: { 200: { description: 'Every source format.', schema: 'FormatListing' } },
    errors: [],
  },
  {
    method: 'GET', path: '/v1/formats/:source', operationId: 'getFormat', scope: 'read', tag: 'Formats',
    summary: 'Targets, options, variants, limits and prices of one source format',
    parameters: [{ name: 'source', in: 'path', required: true, description: 'Source format or file extension.', schema: { type: 'string' } }],
    responses: { 200: { description: 'The format details.', schema: 'FormatDetails' } },
    errors: ['not_found'],
  },
  {
    method: 'GET', path: '/v1/account', operationId: 'getAccount', scope: 'read', tag: 'Account',
    summary: "The key's account: plan, credits, limits",
    responses: { 200: { description: 'The account.', schema: 'Account' } },
    errors: [],
  },
  {
    method: 'GET', path: '/v1/openapi.json', operationId: 'getOpenApi', scope: null, tag: 'Interface',
    summary: 'This document',
    description: 'Needs no API key and is not rate limited: it describes the interface and holds nothing of any account.',
    responses: { 200: { description: 'The OpenAPI 3.1 description of the interface.' } },
    errors: [],
  },
] as const satisfies readonly RouteDoc[];

export type OperationId = (typeof ROUTES)[number]['operationId'];
export type KeyedOperationId = Extract<(typeof ROUTES)[number], { scope: Scope }>['operationId'];
export type PublicOperationId = Exclude<OperationId, KeyedOperationId>;
