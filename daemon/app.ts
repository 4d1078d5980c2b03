import type { IncomingMessage, RequestListener } from 'node:http';
import { toNodeHandler } from 'h3/node';
import { H3, type H3Event } from 'h3';
import { ApiError } from '../src/errors/api-error.ts';
import { SCOPES, type AccountRecord } from '../src/model/account.ts';
import type { Caller } from '../src/service/accounts.ts';
import { negotiateLanguage } from '../src/errors/negotiate.ts';
import type { ConversionSystem } from '../src/service/system.ts';
import { RequestRateLimiter, type RateLimiter } from '../src/service/rate-limiter.ts';
import { createAdmission, createAdmissionNow, refuseInMaintenance, takeRequest } from './http/admission.ts';
import { AuthFailureLimiter } from './http/auth-failures.ts';
import { DEFAULT_BODY_TIMEOUTS } from './http/body-deadline.ts';
import { routeHeadAsGet } from './http/head.ts';
import { nodeRequest } from './http/node-request.ts';
import { createHotRead } from './http/hot-read.ts';
import { apiAnswer, apiFailure, createPipeline, type Answer, type Exchange, type Pipeline, type RequestReport, type RouteRules } from './http/pipeline.ts';
import { errorResponse } from './http/respond.ts';
import { UNMETERED_SPACE } from './ops/disk-space.ts';
import { ROUTES, type RouteDoc } from './routes/table.ts';
import { v1Handlers, type HandlerDeps, type PublicHandler, type RouteHandler } from './routes/v1-handlers.ts';

/** A route outside /v1 that needs no key (health, metrics). */
export interface ExtraRoute {
  path: string;
  handler: (event: H3Event) => Promise<Answer>;
  /** Asked at each request; while false the path is answered like one that does not exist. */
  served?: () => boolean;
}

export interface AppOptions extends Partial<Omit<HandlerDeps, 'system'>> {
  /** Called once per request when it is answered (logs, metrics). */
  onRequestDone?: RequestReport;
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
 * What the web pages share with /v1: the request pipeline every route answers through, and a
 * submission that runs the same checks and handler as POST /v1/conversions (the maintenance
 * switch, the account's requests per minute, the plan's limits, the upload's admission), for the
 * signed-in account instead of a key's. A submission throws its refusal (an ApiError, its
 * RateLimit-* headers already in `exchange.headers`): the page's call answers it in the spec's
 * error shape, in the page's language.
 */
export interface WebApiBridge {
  pipeline: Pipeline;
  submit(event: H3Event, account: AccountRecord, exchange: Exchange): Promise<Answer>;
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

  const pipeline = createPipeline(done);

  const keyedRoute = (route: RouteDoc & { scope: NonNullable<RouteDoc['scope']> }, handler: RouteHandler) => {
    const { method, path, scope } = route;
    // A body still arriving after a refusal (e.g. an upload over the limit) is dropped, then the connection closed.
    const rules: RouteRules = { method, route: path, failure: apiFailure, lingerOnFailure: method === 'POST' };
    const answer = async (event: H3Event, exchange: Exchange) => {
      const caller = await admit(event.req.headers.get('authorization'), scope, exchange.headers, exchange.req);
      exchange.accountId = caller.account.id;
      return apiAnswer(await handler({ event, caller, language: exchange.language, nodeReq: exchange.req, baseUrl: baseUrlFor(exchange.req) }), exchange);
    };
    app.on(method, path, (event) => pipeline.run(event, rules, answer));
  };

  const extras = options.extraRoutes ?? [];
  const known = [
    ...ROUTES.map((route) => ({ pattern: pathPattern(route.path), served: undefined })),
    ...extras.map((route) => ({ pattern: pathPattern(route.path), served: route.served })),
  ];
  /** Any path that is not a route (or not served now): the spec's error shape too, never h3's own. */
  const unmatchedRules: RouteRules = { route: 'unmatched', failure: apiFailure };
  const refuseUnmatched = async (event: H3Event): Promise<never> => {
    const path = new URL(event.req.url).pathname;
    const exists = known.some(({ pattern, served }) => (served?.() ?? true) && pattern.test(path));
    throw new ApiError(exists ? 'method_not_allowed' : 'not_found', { params: { resource: 'route' } });
  };
  const unmatched = (event: H3Event) => pipeline.run(event, unmatchedRules, refuseUnmatched);

  /** No key, no rate limit, no maintenance switch: health, metrics, the interface's description. */
  const openRoute = (method: string, path: string, handler: (event: H3Event) => Promise<Answer>, served?: () => boolean) => {
    const rules: RouteRules = { method, route: path, failure: apiFailure };
    app.on(method as 'GET', path, (event) => (served && !served() ? unmatched(event) : pipeline.run(event, rules, handler)));
  };

  if (options.serveApi === false) {
    // A load balancer that still sends here gets the code every client already retries on.
    const rules: RouteRules = { route: '/v1/**', failure: apiFailure };
    const refuse = async (): Promise<never> => {
      throw new ApiError('api_disabled', { params: { reason: 'worker_only', retry_after: WORKER_ONLY_RETRY_AFTER }, headers: { 'Retry-After': String(WORKER_ONLY_RETRY_AFTER) } });
    };
    app.all('/v1/**', (event) => pipeline.run(event, rules, refuse));
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
    pipeline,
    async submit(event, account, exchange) {
      await refuseInMaintenance(system);
      await takeRequest(system, limiter, account, exchange.headers);
      const response = await handlers.keyed.createConversion({ event, caller: webCaller(account), language: exchange.language, nodeReq: exchange.req, baseUrl: baseUrlFor(exchange.req) });
      return apiAnswer(response, exchange);
    },
  });
  app.all('/**', unmatched);

  const h3Listener = toNodeHandler(app);
  const hotRead = createHotRead({ admit, admitNow: createAdmissionNow(system, limiter), conversions: system.conversions, baseUrlFor, done });
  // A worker-only node has no /v1 to read fast: every request goes to its one 503 route.
  const readHot = options.serveApi === false ? () => false : hotRead;
  const listener: RequestListener = (req, res) => {
    routeHeadAsGet(req);
    if (!readHot(req, res)) void h3Listener(req, res);
  };
  return { h3: app, listener };
}
