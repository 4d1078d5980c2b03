import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../src/errors/api-error.ts';
import { REQUEST_FIELDS, validationError, type CreateRequestInput } from '../../src/service/create-request.ts';
import { watchBody, type BodyTimeouts } from './body-deadline.ts';
import { parseMultipart, type MultipartLimits } from './multipart.ts';

const MAX_TEXT_BODY = 1024 * 1024;
/**
 * Room for a multipart body's other parts and boundaries: the file is at least the body less
 * this, and a body longer than the file limit plus this is refused unread.
 */
const MULTIPART_FRAMING_BYTES = 1024 * 1024;

function bodyProblem(text: string): ApiError {
  return new ApiError('validation_failed', { details: { body: text }, params: { hint: ` ${text}` } });
}

/**
 * Reads a small body by events, not `for await`: leaving that loop early destroys the request and
 * its socket before the answer is written, so the client would get a reset instead of the error.
 * Over the limit, the rest is left unread (and drained by the lingering close).
 */
function readText(req: IncomingMessage, signal: AbortSignal): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_TEXT_BODY) return Promise.reject(bodyProblem(`The request body is larger than ${MAX_TEXT_BODY} bytes.`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const stop = (error: ApiError) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      signal.removeEventListener('abort', onAbort);
      reject(error);
    };
    const onAbort = () => stop(signal.reason instanceof ApiError ? signal.reason : bodyProblem('The request body was interrupted.'));
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > MAX_TEXT_BODY) stop(bodyProblem(`The request body is larger than ${MAX_TEXT_BODY} bytes.`));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      signal.removeEventListener('abort', onAbort);
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = () => stop(bodyProblem('The request body was interrupted.'));
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
  });
}

/**
 * Splits received names into request fields and options: `options[quality]` and any name that is
 * not a request field are options (flat form), a JSON `options` object too.
 */
function sortFields(entries: Iterable<[string, unknown]>): Pick<CreateRequestInput, 'fields' | 'options'> {
  const fields: Record<string, unknown> = {};
  const options: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    const bracket = /^options\[([^\]]+)\]$/.exec(name);
    if (bracket) options[bracket[1]!] = value;
    else if (name === 'options') {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) Object.assign(options, value);
      else if (value !== undefined && value !== '') throw validationError({ options: { reason: 'invalid_type', params: { expected: 'object' } } });
    } else if (REQUEST_FIELDS.has(name)) fields[name] = value;
    else options[name] = value;
  }
  return { fields, options };
}

const ACCEPTED = ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'];

function contentType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** What an upload announced before its body is read. */
export interface AnnouncedUpload {
  /** Content-Length; null when the body is sent chunked. */
  bodyBytes: number | null;
  /** The least the file can be, by that length; null when it is not known. */
  fileBytes: number | null;
}

/**
 * For a multipart request (an upload), what its headers announce; null for the other content
 * types, whose bodies are small and held in memory. A declared length far above the file limit
 * is refused here, before anything else is looked at.
 */
export function announcedUpload(req: IncomingMessage, limits: Pick<MultipartLimits, 'maxFileBytes' | 'maxFileMb'>): AnnouncedUpload | null {
  if (contentType(req) !== 'multipart/form-data') return null;
  const header = req.headers['content-length'];
  const bodyBytes = header === undefined ? null : Number(header);
  if (bodyBytes !== null && bodyBytes > limits.maxFileBytes + MULTIPART_FRAMING_BYTES) {
    throw new ApiError('file_too_large', { details: { max_upload_mb: limits.maxFileMb }, params: { max_upload_mb: limits.maxFileMb } });
  }
  return { bodyBytes, fileBytes: bodyBytes === null ? null : Math.max(0, bodyBytes - MULTIPART_FRAMING_BYTES) };
}

export interface BodyOptions extends Omit<MultipartLimits, 'hashFiles' | 'signal'> {
  timeouts: BodyTimeouts;
}

/**
 * Reads a conversion request in any of the three content types, within the body's
 * time limits (408 request_timeout when it stalls or takes too long).
 */
export async function readCreateRequest(req: IncomingMessage, options: BodyOptions, idempotencyKey: string | undefined): Promise<CreateRequestInput> {
  const type = contentType(req);
  if (!ACCEPTED.includes(type)) {
    throw new ApiError('validation_failed', {
      details: { content_type: type || null, accepted: ACCEPTED },
      params: { hint: ' Send multipart/form-data, application/x-www-form-urlencoded or application/json.' },
    });
  }
  const { timeouts, ...limits } = options;
  const watch = watchBody(req, timeouts);
  try {
    return await readBody(req, type, { ...limits, signal: watch.signal }, idempotencyKey);
  } finally {
    watch.stop();
  }
}

async function readBody(
  req: IncomingMessage,
  type: string,
  limits: Omit<MultipartLimits, 'hashFiles'> & { signal: AbortSignal },
  idempotencyKey: string | undefined,
): Promise<CreateRequestInput> {
  if (type === 'multipart/form-data') {
    const body = await parseMultipart(req, { ...limits, hashFiles: idempotencyKey !== undefined });
    return { ...sortFields(Object.entries(body.fields)), files: body.files, idempotencyKey };
  }
  if (type === 'application/x-www-form-urlencoded') {
    const params = new URLSearchParams(await readText(req, limits.signal));
    return { ...sortFields(params.entries()), files: [], idempotencyKey };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readText(req, limits.signal));
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw bodyProblem('The body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bodyProblem('The JSON body must be an object.');
  if ('file' in parsed) throw bodyProblem('A file can be sent only as multipart/form-data; with JSON send `url`.');
  return { ...sortFields(Object.entries(parsed)), files: [], idempotencyKey };
}
