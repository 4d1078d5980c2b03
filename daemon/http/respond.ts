import { HTTPResponse } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import { renderFieldMessage, renderMessage, type FieldReason, type Language } from '../../src/errors/messages.ts';

/**
 * A JSON answer as h3's HTTPResponse rather than a web Response: h3 (srvx) then writes the string
 * in one go with a Content-Length, where a Response body goes through a ReadableStream and
 * chunked encoding on every request (measured: most of the gap to a bare node:http server in
 * `npm run bench` (a)).
 */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): HTTPResponse {
  return new HTTPResponse(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
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

/** The one error shape of spec 7: `{ error: { code, message, details? } }`, nothing else in the body. */
export function errorResponse(error: unknown, language: Language, extraHeaders: Record<string, string> = {}): HTTPResponse {
  const apiError = error instanceof ApiError ? error : new ApiError('internal_error');
  const details = localizeDetails(apiError.details, language);
  const params = { ...apiError.params };
  if (apiError.code === 'validation_failed' && params.hint === undefined) params.hint = validationHint(details);
  const body: { error: { code: string; message: string; details?: Record<string, unknown> } } = {
    error: { code: apiError.code, message: renderMessage(apiError.code, params, language) },
  };
  if (details) body.error.details = details;
  return json(apiError.status, body, { 'content-language': language, ...extraHeaders, ...apiError.headers });
}
