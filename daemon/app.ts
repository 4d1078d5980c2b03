import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { H3, type H3Event, type HTTPResponse } from 'h3';
import { ApiError } from '../src/errors/api-error.ts';
import { negotiateLanguage, } from '../src/errors/negotiate.ts';
import type { Language } from '../src/errors/messages.ts';
import type { Scope } from '../src/model/account.ts';
import { BYTES_PER_MB } from '../src/model/plan.ts';
import type { Caller } from '../src/service/accounts.ts';
import type { ConversionSystem } from '../src/service/system.ts';
import { RequestRateLimiter, type RateDecision } from '../src/service/rate-limiter.ts';
import { END_STATUSES } from '../src/model/status.ts';
import { readCreateRequest } from './http/body.ts';
import { attachmentHeader } from './http/content-disposition.ts';
import { lingerThenClose } from './http/linger.ts';
import { parseRange } from './http/range.ts';
import { errorResponse, json } from './http/respond.ts';

export interface AppOptions {
  /** Called once per request when it is answered (logs, metrics). */
  onRequestDone?: (info: { method: string; route: string; status: number; durationMs: number; accountId: string | null }) => void;
}

interface Context {
  event: H3Event;
  caller: Caller;
  language: Language;
  nodeReq: IncomingMessage;
}

type RouteHandler = (context: Context) => Promise<Response | HTTPResponse>;

const MAX_WAIT_SECONDS = 30;

function rateHeaders(decision: RateDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(decision.limit),
    'ratelimit-remaining': String(decision.remaining),
    'ratelimit-reset': String(decision.resetSeconds),
  };
}

function bearerToken(header: string | null): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** The /v1 interface of spec section 4 on h3 v2. Every answer, errors included, is built here. */
export function createApp(system: ConversionSystem, options: AppOptions = {}): H3 {
  const { conversions, accounts, store } = system;
  const limiter = new RequestRateLimiter();
  const app = new H3({
    silent: true,
    // h3 answers a few requests itself before any route runs (a path whose percent-encoding cannot
    // be decoded gets its own 400 body): give those the spec's error shape too. Such a path names
    // nothing that exists, so 404; anything else reaching here is our bug.
    onError: (error, event) => errorResponse(
      new ApiError(error.status === 400 || error.status === 404 ? 'not_found' : 'internal_error', { params: { resource: 'route' } }),
      negotiateLanguage(event.req.headers.get('accept-language')),
    ),
  });

  const route = (method: string, path: string, scope: Scope, handler: RouteHandler) => {
    app.on(method as 'GET', path, async (event) => {
      const started = performance.now();
      const language = negotiateLanguage(event.req.headers.get('accept-language'));
      let headers: Record<string, string> = {};
      let accountId: string | null = null;
      let response: Response | HTTPResponse;
      try {
        const settings = await store.getSettings();
        if (settings.maintenance.enabled) {
          const retryAfter = settings.maintenance.retry_after;
          throw new ApiError('api_disabled', { params: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) } });
        }
        const caller = await accounts.authenticate(bearerToken(event.req.headers.get('authorization')));
        accountId = caller.account.id;
        const decision = limiter.take(caller.account.id, system.conversions.config.plans[caller.account.plan].requests_per_minute);
        headers = rateHeaders(decision);
        if (!decision.allowed) {
          throw new ApiError('rate_limited', {
            params: { retry_after: decision.retryAfterSeconds },
            details: { limit: 'requests_per_minute', requests_per_minute: decision.limit },
            headers: { 'Retry-After': String(decision.retryAfterSeconds) },
          });
        }
        accounts.requireScope(caller, scope);
        const nodeReq = (event.req as { runtime?: { node?: { req: IncomingMessage } } }).runtime!.node!.req;
        response = await handler({ event, caller, language, nodeReq });
        for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
        response.headers.set('content-language', language);
      } catch (error) {
        if (!(error instanceof ApiError)) {
          process.emitWarning(`convd: unexpected error on ${method} ${path}: ${error instanceof Error ? error.stack : String(error)}`);
        }
        response = errorResponse(error, language, headers);
        // A body still arriving (e.g. an upload over the limit) is not read: drop it, then close.
        const nodeReq = (event.req as { runtime?: { node?: { req: IncomingMessage } } }).runtime?.node?.req;
        if (method === 'POST' && nodeReq) lingerThenClose(nodeReq);
      }
      options.onRequestDone?.({ method, route: path, status: response.status ?? 200, durationMs: performance.now() - started, accountId });
      return response;
    });
  };

  const conversionAnswer = (record: Parameters<typeof conversions.publicView>[0], wasWaitedFor: boolean) => {
    const view = conversions.publicView(record);
    if (END_STATUSES.has(record.status) || !wasWaitedFor) {
      return json(END_STATUSES.has(record.status) ? 200 : 202, view, END_STATUSES.has(record.status) ? {} : { location: view.links.self });
    }
    return json(202, view, { location: view.links.self });
  };

  const create: RouteHandler = async ({ caller, nodeReq, event }) => {
    const plan = conversions.config.plans[caller.account.plan];
    const key = event.req.headers.get('idempotency-key') ?? undefined;
    const input = await readCreateRequest(nodeReq, {
      maxFileBytes: plan.max_upload_mb * BYTES_PER_MB,
      maxFileMb: plan.max_upload_mb,
      spoolPath: () => system.blobs.spoolPath(),
      discard: (path) => system.blobs.discardSpool(path),
    }, key);
    const outcome = await conversions.create(caller.account, input);
    // `event.req.signal` builds an AbortSignal wired to the socket (~5 us): only when it is used.
    const record = await conversions.waitForEnd(outcome.record, outcome.wait, outcome.wait > 0 ? event.req.signal : undefined);
    return conversionAnswer(record, true);
  };
  route('POST', '/v1/conversions', 'convert', create);
  route('POST', '/v1/convert', 'convert', create);

  route('GET', '/v1/conversions', 'read', async ({ caller, event }) => {
    const query = new URL(event.req.url).searchParams;
    const page = await conversions.list(caller.account, {
      status: query.get('status') ?? undefined,
      cursor: query.get('cursor') ?? undefined,
      limit: query.get('limit') ?? undefined,
    });
    return json(200, page);
  });

  route('GET', '/v1/conversions/:id', 'read', async ({ caller, event }) => {
    const record = await conversions.get(caller.account, event.context.params?.id ?? '');
    // The hot read of every poller: parse a query only when there is one.
    const queryAt = event.req.url.indexOf('?');
    const rawWait = queryAt === -1 ? null : new URLSearchParams(event.req.url.slice(queryAt + 1)).get('wait');
    let wait = 0;
    if (rawWait !== null && rawWait !== '') {
      wait = /^\d+$/.test(rawWait) ? Number(rawWait) : NaN;
      if (!(wait >= 0 && wait <= MAX_WAIT_SECONDS)) {
        throw new ApiError('validation_failed', { details: { fields: { wait: { reason: 'out_of_range', params: { min: 0, max: MAX_WAIT_SECONDS } } } } });
      }
    }
    const current = await conversions.waitForEnd(record, wait, wait > 0 ? event.req.signal : undefined);
    return json(200, conversions.publicView(current));
  });

  route('DELETE', '/v1/conversions/:id', 'delete', async ({ caller, event }) => {
    const record = await conversions.delete(caller.account, event.context.params?.id ?? '');
    return json(200, conversions.publicView(record));
  });

  route('GET', '/v1/conversions/:id/download', 'read', async ({ caller, event }) => {
    const download = await conversions.download(caller.account, event.context.params?.id ?? '');
    const range = parseRange(event.req.headers.get('range'), download.size);
    const headers: Record<string, string> = {
      'content-type': 'application/octet-stream',
      'content-disposition': attachmentHeader(download.record.result!.filename),
      'accept-ranges': 'bytes',
      'content-length': String(range ? range.end - range.start + 1 : download.size),
      'cache-control': 'private, no-store',
    };
    if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${download.size}`;
    const stream = download.open(range ?? undefined) as Readable;
    return new Response(Readable.toWeb(stream) as ReadableStream, { status: range ? 206 : 200, headers });
  });

  route('GET', '/v1/formats', 'read', async () => json(200, conversions.listFormats()));

  route('GET', '/v1/formats/:source', 'read', async ({ caller, event }) =>
    json(200, conversions.formatDetails(caller.account, decodeURIComponent(event.context.params?.source ?? ''))),
  );

  route('GET', '/v1/account', 'read', async ({ caller }) => json(200, await accounts.view(caller.account)));

  // Anything else: the spec's error shape too, never h3's own.
  const KNOWN_PATHS = [/^\/v1\/conversions\/?$/, /^\/v1\/convert\/?$/, /^\/v1\/conversions\/[^/]+(\/download)?\/?$/, /^\/v1\/formats(\/[^/]+)?\/?$/, /^\/v1\/account\/?$/];
  app.all('/**', (event) => {
    const language = negotiateLanguage(event.req.headers.get('accept-language'));
    const path = new URL(event.req.url).pathname;
    const known = KNOWN_PATHS.some((pattern) => pattern.test(path));
    return errorResponse(new ApiError(known ? 'method_not_allowed' : 'not_found', { params: { resource: 'route' } }), language);
  });
  return app;
}
