import type { IncomingMessage } from 'node:http';
import type { H3Event, HTTPResponse } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import type { Language } from '../../src/errors/messages.ts';
import { negotiateLanguage } from '../../src/errors/negotiate.ts';
import { reportedMethod } from './head.ts';
import { lingerThenClose } from './linger.ts';
import { nodeRequest } from './node-request.ts';
import { addHeaders, errorResponse } from './respond.ts';

/** What the daemon logs and counts of every answered request. */
export interface RequestInfo {
  method: string;
  /** The route pattern (`/v1/conversions/:id`), `unmatched` for anything else. */
  route: string;
  status: number;
  durationMs: number;
  accountId: string | null;
  req: IncomingMessage | undefined;
}

export type RequestReport = (info: RequestInfo) => void;

export type Answer = Response | HTTPResponse;

/**
 * One request on its way from arrival to its report: when it arrived, the language its answer
 * speaks, the headers every answer to it carries (a refusal's too: RateLimit-*), and the account
 * it was admitted for. Handlers fill in what they learn; the pipeline reads it at the end.
 */
export class Exchange {
  readonly started = performance.now();
  readonly headers: Record<string, string> = {};
  accountId: string | null = null;
  /** From Accept-Language; a page sets its own (a chosen one, a cookie's) once it has read them. */
  language: Language;

  constructor(
    readonly req: IncomingMessage,
    /** The method the request was routed by (GET for a HEAD: see head.ts). */
    readonly method: string,
    readonly route: string,
    acceptLanguage: string | null | undefined,
  ) {
    this.language = negotiateLanguage(acceptLanguage);
  }
}

/** How the requests of one route fail. */
export interface FailureRules<A> {
  /** The answer to a thrown error: the API's error envelope, or a page. */
  failure: (error: unknown, exchange: Exchange) => A;
  /** The handler reads a body: after a failure the rest of it is dropped, then the connection closed. */
  lingerOnFailure?: boolean;
}

/** An h3 route's rules: its failures, and what its report names it. */
export interface RouteRules extends FailureRules<Answer> {
  route: string;
  /** The routed method; absent on a route that answers every method (the request's own then). */
  method?: string;
}

/** The API's failure: `{ error: { code, message } }` in the request's language, with its headers. */
export const apiFailure = (error: unknown, exchange: Exchange): Answer => errorResponse(error, exchange.language, exchange.headers);

/** An answer of the API carries Content-Language and the headers gathered on the way (RateLimit-*). */
export function apiAnswer<A extends Answer>(response: A, exchange: Exchange): A {
  addHeaders(response, { ...exchange.headers, 'content-language': exchange.language });
  return response;
}

/** The log line of an error no one planned for; an ApiError is a refusal the interface describes, not one. */
export function warnUnexpected(where: string, error: unknown): void {
  process.emitWarning(`convd: unexpected error ${where}: ${error instanceof Error ? error.stack : String(error)}`);
}

/**
 * The handler's answer, or the route's failure answer to what it threw (logged unless a planned
 * refusal). The handler takes its input as an argument rather than in a closure: the hot read
 * (hot-read.ts) runs this for every poll and allocates nothing it can avoid.
 */
export async function settle<I, A>(exchange: Exchange, rules: FailureRules<A>, handler: (input: I, exchange: Exchange) => Promise<A>, input: I): Promise<A> {
  try {
    return await handler(input, exchange);
  } catch (error) {
    return failed(exchange, rules, error);
  }
}

/** `settle` for a handler that answers at once (the hot read's from memory): its answer, or the failure's. */
export function settleNow<I, A>(exchange: Exchange, rules: FailureRules<A>, handler: (input: I, exchange: Exchange) => A, input: I): A {
  try {
    return handler(input, exchange);
  } catch (error) {
    return failed(exchange, rules, error);
  }
}

function failed<A>(exchange: Exchange, rules: FailureRules<A>, error: unknown): A {
  if (!(error instanceof ApiError)) warnUnexpected(`on ${exchange.method} ${exchange.route}`, error);
  if (rules.lingerOnFailure) lingerThenClose(exchange.req);
  return rules.failure(error, exchange);
}

/** The one report of an answered request (logs, metrics). */
export function report(done: RequestReport | undefined, exchange: Exchange, status: number): void {
  done?.({
    method: reportedMethod(exchange.req, exchange.method), route: exchange.route, status,
    durationMs: performance.now() - exchange.started, accountId: exchange.accountId, req: exchange.req,
  });
}

/**
 * The one way an h3 route of the daemon answers (the API's routes, the unmatched path, the
 * worker-only refusal, health and metrics, the web pages): timed from arrival, its language
 * negotiated, its failure answered by its rules and logged when unplanned, and reported once.
 */
export interface Pipeline {
  run(event: H3Event, rules: RouteRules, handler: (event: H3Event, exchange: Exchange) => Promise<Answer>): Promise<Answer>;
}

export function createPipeline(done: RequestReport | undefined): Pipeline {
  return {
    async run(event, rules, handler) {
      const exchange = new Exchange(nodeRequest(event)!, rules.method ?? event.req.method, rules.route, event.req.headers.get('accept-language'));
      const response = await settle(exchange, rules, handler, event);
      report(done, exchange, response.status ?? 200);
      return response;
    },
  };
}
