import type { IncomingMessage, RequestListener } from 'node:http';
import { toNodeHandler } from 'h3/node';
import { H3, type H3Event, type HTTPResponse } from 'h3';
import { ApiError } from '../src/errors/api-error.ts';
import type { Language } from '../src/errors/messages.ts';
import { SCOPES, type AccountRecord } from '../src/model/account.ts';
import type { Caller } from '../src/service/accounts.ts';
import { negotiateLanguage } from '../src/errors/negotiate.ts';
import type { ConversionSystem } from '../src/service/system.ts';
import { RequestRateLimiter, type RateLimiter } from '../src/service/rate-limiter.ts';
import { createAdmission, refuseInMaintenance, takeRequest } from './http/admission.ts';
import { AuthFailureLimiter } from './http/auth-failures.ts';
import { DEFAULT_BODY_TIMEOUTS } from './http/body-deadline.ts';
import { reportedMethod, routeHeadAsGet } from './http/head.ts';
import { nodeRequest } from './http/node-request.ts';
import type { RequestInfo } from './http/request-info.ts';
import { createHotRead } from './http/hot-read.ts';
import { lingerThenClose } from './http/linger.ts';
import { addHeaders, errorResponse } from './http/respond.ts';
import { UNMETERED_SPACE } from './ops/disk-space.ts';
import { ROUTES, type RouteDoc } from './routes/table.ts';
import { v1Handlers, type HandlerDeps, type PublicHandler, type RouteHandler } from './routes/v1-handlers.ts';

export type { RequestInfo } from './http/request-info.ts';

/** A route outside /v1 that needs no key (health, metrics). */
export interface ExtraRoute {
  path: string;
  handler: (event: H3Event) => Promise<Response | HTTPResponse>;
  /** Asked at each request; while false the path is answered like one that does not exist. */
  served?: () => boolean;
}

export interface AppOptions extends Partial<Omit<HandlerDeps, 'system'>> {
  /** Called once per request when it is answered (logs, metrics). */
  onRequestDone?: (info: RequestInfo) => void;
  /** Public base ending in /v1 for this request (a trusted proxy's X-Forwarded-*); default the configured one. */
  baseUrlFor?: (req: IncomingMessage) => string;
  extraRoutes?: ExtraRoute[];
  /** The client's address, for the limit on failed authentications; default the socket's peer. */
  clientAddress?: (req: IncomingMessage) => string;
  /** Failed authentications allowed per client address and minute; 0 or absent: no limit. */
  authFailuresPerMinute?: () => number;
  /** False on a worker-only node: every /v1 path answers 503 (WORKER_ONLY_RETRY_AFTER); default true. */
  serveApi?: boolean;
  /** Registers the web face's pages (daemon/web/routes.ts) before the catch-all; absent: no pages. */
  web?: (app: H3, api: WebApiBridge) => void;
}

/**
 * What the web pages' own calls share with /v1: a submission runs
 * the same checks and handler as POST /v1/conversions (the maintenance switch, the account's
 * requests per minute, the plan's limits, the upload's admission), for the signed-in account
 * instead of a key's. Answers in the spec's error shape, in the page's language.
 */
export interface WebApiBridge {
  submit(event: H3Event, account: AccountRecord, language: Language): Promise<Response | HTTPResponse>;
}

/** The caller of a web page's submission: the session's account, as if with a key of every scope. */
const webCaller = (account: AccountRecord): Caller => ({
  account,
  key: { id: 'web-session', account_id: account.id, hash: '', prefix: 'web', scopes: [...SCOPES], created_at: account.created_at, revoked_at: null },
});

/** What a worker-only node tells a client that reached it: another node answers at once. */
const WORKER_ONLY_RETRY_AFTER = 1;


/** `/v1/conversions/:id` -> a pattern matching its concrete paths (for 404 against 405). */
const pathPattern = (path: string) => new RegExp(`^${path.replace(/:\w+/g, '[^/]+')}/?$`);

/**
 * The /v1 interface of spec section 4 on h3 v2, registered from the route table of
 * daemon/routes/table.ts (the same table the OpenAPI document is built from). Every answer,
 * errors included, is built here.
 */
export interface DaemonApp {
  h3: H3;
  /** What node:http serves: the hot read of hot-read.ts, everything else through h3. */
  listener: RequestListener;
}

export function createApp(system: ConversionSystem, options: AppOptions = {}): DaemonApp {
  const limiter: RateLimiter = system.rateLimiter ?? new RequestRateLimiter();
  const done = options.onRequestDone;
  const baseUrlFor = options.baseUrlFor ?? (() => system.conversions.config.baseUrl);
  const handlers = v1Handlers({
    system,
    refuseSubmissions: options.refuseSubmissions ?? (() => null),
    uploadSpace: options.uploadSpace ?? UNMETERED_SPACE,
    bodyTimeouts: options.bodyTimeouts ?? (() => DEFAULT_BODY_TIMEOUTS),
    shutdownSignal: options.shutdownSignal ?? new AbortController().signal,
    openApiJson: options.openApiJson ?? (() => '{}'),
  });
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

  const admit = createAdmission(system, limiter, {
    limiter: new AuthFailureLimiter(),
    perMinute: options.authFailuresPerMinute ?? (() => 0),
    clientAddress: options.clientAddress ?? ((req) => req.socket.remoteAddress ?? ''),
  });

  const keyedRoute = (route: RouteDoc & { scope: NonNullable<RouteDoc['scope']> }, handler: RouteHandler) => {
    const { method, path, scope } = route;
    app.on(method, path, async (event) => {
      const started = performance.now();
      const language = negotiateLanguage(event.req.headers.get('accept-language'));
      const headers: Record<string, string> = {};
      let accountId: string | null = null;
      let response: Response | HTTPResponse;
      const nodeReq = nodeRequest(event)!;
      try {
        const caller = await admit(event.req.headers.get('authorization'), scope, headers, nodeReq);
        accountId = caller.account.id;
        response = await handler({ event, caller, language, nodeReq, baseUrl: baseUrlFor(nodeReq) });
        headers['content-language'] = language;
        addHeaders(response, headers);
      } catch (error) {
        if (!(error instanceof ApiError)) {
          process.emitWarning(`convd: unexpected error on ${method} ${path}: ${error instanceof Error ? error.stack : String(error)}`);
        }
        response = errorResponse(error, language, headers);
        // A body still arriving (e.g. an upload over the limit) is not read: drop it, then close.
        if (method === 'POST') lingerThenClose(nodeReq);
      }
      done?.({ method: reportedMethod(nodeReq, method), route: path, status: response.status ?? 200, durationMs: performance.now() - started, accountId, req: nodeReq });
      return response;
    });
  };

  const extras = options.extraRoutes ?? [];
  const known = [
    ...ROUTES.map((route) => ({ pattern: pathPattern(route.path), served: undefined })),
    ...extras.map((route) => ({ pattern: pathPattern(route.path), served: route.served })),
  ];
  /** Any path that is not a route (or not served now): the spec's error shape too, never h3's own. */
  const unmatched = (event: H3Event, started: number) => {
    const language = negotiateLanguage(event.req.headers.get('accept-language'));
    const path = new URL(event.req.url).pathname;
    const exists = known.some(({ pattern, served }) => (served?.() ?? true) && pattern.test(path));
    const response = errorResponse(new ApiError(exists ? 'method_not_allowed' : 'not_found', { params: { resource: 'route' } }), language);
    const req = nodeRequest(event);
    done?.({ method: reportedMethod(req, event.req.method), route: 'unmatched', status: response.status ?? 404, durationMs: performance.now() - started, accountId: null, req });
    return response;
  };

  /** No key, no rate limit, no maintenance switch: health, metrics, the interface's description. */
  const openRoute = (method: string, path: string, handler: (event: H3Event) => Promise<Response | HTTPResponse>, served?: () => boolean) => {
    app.on(method as 'GET', path, async (event) => {
      const started = performance.now();
      if (served && !served()) return unmatched(event, started);
      let response: Response | HTTPResponse;
      try {
        response = await handler(event);
      } catch (error) {
        process.emitWarning(`convd: unexpected error on ${method} ${path}: ${error instanceof Error ? error.stack : String(error)}`);
        response = errorResponse(error, negotiateLanguage(event.req.headers.get('accept-language')));
      }
      const req = nodeRequest(event);
      done?.({ method: reportedMethod(req, method), route: path, status: response.status ?? 200, durationMs: performance.now() - started, accountId: null, req });
      return response;
    });
  };

  if (options.serveApi === false) {
    // A load balancer that still sends here gets the code every client already retries on.
    app.all('/v1/**', (event) => {
      const started = performance.now();
      const response = errorResponse(
        new ApiError('api_disabled', { params: { reason: 'worker_only', retry_after: WORKER_ONLY_RETRY_AFTER }, headers: { 'Retry-After': String(WORKER_ONLY_RETRY_AFTER) } }),
        negotiateLanguage(event.req.headers.get('accept-language')),
      );
      const req = nodeRequest(event);
      done?.({ method: reportedMethod(req, event.req.method), route: '/v1/**', status: response.status ?? 503, durationMs: performance.now() - started, accountId: null, req });
      return response;
    });
  }
  for (const route of options.serveApi === false ? [] : ROUTES) {
    if (route.scope === null) {
      const handler: PublicHandler = handlers.open[route.operationId];
      openRoute(route.method, route.path, (event) => handler({ event, baseUrl: baseUrlFor(nodeRequest(event)!) }));
    } else {
      keyedRoute(route, handlers.keyed[route.operationId]);
    }
  }
  for (const extra of extras) openRoute('GET', extra.path, extra.handler, extra.served);
  options.web?.(app, {
    async submit(event, account, language) {
      const headers: Record<string, string> = {};
      const nodeReq = nodeRequest(event)!;
      try {
        await refuseInMaintenance(system);
        await takeRequest(system, limiter, account, headers);
        const response = await handlers.keyed.createConversion({ event, caller: webCaller(account), language, nodeReq, baseUrl: baseUrlFor(nodeReq) });
        addHeaders(response, { ...headers, 'content-language': language });
        return response;
      } catch (error) {
        if (!(error instanceof ApiError)) process.emitWarning(`convd: unexpected error on a web submission: ${error instanceof Error ? error.stack : String(error)}`);
        lingerThenClose(nodeReq);
        return errorResponse(error, language, headers);
      }
    },
  });
  app.all('/**', (event) => unmatched(event, performance.now()));

  const h3Listener = toNodeHandler(app);
  const hotRead = createHotRead({ admit, conversions: system.conversions, baseUrlFor, done });
  // A worker-only node has no /v1 to read fast: every request goes to its one 503 route.
  const readHot = options.serveApi === false ? () => false : hotRead;
  const listener: RequestListener = (req, res) => {
    routeHeadAsGet(req);
    if (!readHot(req, res)) void h3Listener(req, res);
  };
  return { h3: app, listener };
}
