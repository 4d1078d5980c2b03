import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import { negotiateLanguage } from '../../src/errors/negotiate.ts';
import { LANGUAGES, renderMessage, type Language } from '../../src/errors/messages.ts';
import { WebSignIn, type WebSession } from '../../src/sign-in/web-sign-in.ts';
import { messagePage, type PageContext } from './pages.ts';
import { keptLanguage, languageCookie, sessionToken } from './cookies.ts';
import { PAGE_HEADERS, sameOrigin } from './security.ts';
import { translator, type Translate } from './text.ts';
import { apiFailure, type Answer, type Exchange, type Pipeline, type RouteRules } from '../http/pipeline.ts';

/** What a page's request needs from the daemon. */
export interface PageDeps {
  signIn: WebSignIn;
  /** The public origin of this request (configured, or a trusted proxy's), besides the Host it came to. */
  publicOrigin: (req: IncomingMessage) => string;
  /** The path the pages are served under ('' at the host's root), from public_url; read at each request (SIGHUP may change it). */
  basePath?: () => string;
  /** The daemon's one request pipeline (timing, logging, metrics), the API's too. */
  pipeline: Pipeline;
}

/** A form is a handful of fields: anything larger is not one of ours. */
const FORM_LIMIT_BYTES = 16 * 1024;

type PageHandler = (request: PageRequest, exchange: Exchange) => Promise<Answer>;

/**
 * Runs a page's handler through the pipeline with its request read (session, language), answering
 * a refused form in words and any other failure as a page (its status and message in the page's
 * language; 500 for what no one planned, logged).
 */
export function pageHandler(deps: PageDeps) {
  return (event: H3Event, route: string, handler: PageHandler): Promise<Answer> => servePage(deps, event, route, handler, 'page');
}

/**
 * The same for the calls the pages' script makes (under /web/api/): their failures answer in
 * the API's error shape, in the page's language, which the script reads.
 */
export function pageCallHandler(deps: PageDeps) {
  return (event: H3Event, route: string, handler: PageHandler): Promise<Answer> => servePage(deps, event, route, handler, 'call');
}

function servePage(deps: PageDeps, event: H3Event, route: string, handler: PageHandler, kind: 'page' | 'call'): Promise<Answer> {
  let request: PageRequest | undefined;
  const rules: RouteRules = {
    route,
    failure: kind === 'call' ? apiFailure : (error, exchange) => failurePage(request ?? pageRequest(event, exchange.req, deps, undefined), error),
    // A submission's upload may still be arriving when it is refused.
    lingerOnFailure: kind === 'call' && event.req.method === 'POST',
  };
  return deps.pipeline.run(event, rules, async (_, exchange) => {
    // Read before the session is looked up: a failing lookup is told in the page's language too.
    request = pageRequest(event, exchange.req, deps, keptLanguage(event));
    exchange.language = request.language;
    signIn(request, await deps.signIn.session(sessionToken(event)));
    try {
      return await handler(request, exchange);
    } catch (error) {
      if (!(error instanceof FormRefused)) throw error;
      return respond(request, error.status, messagePage(request.context, request.t('title'), request.t('forbiddenForm')));
    }
  });
}

/** A failure on a page, as a page: a refusal's own status and words, else 500 "an internal error". */
function failurePage(request: PageRequest, error: unknown): Response {
  const refusal = error instanceof ApiError ? error : new ApiError('internal_error');
  return respond(request, refusal.status, messagePage(request.context, request.t('title'), renderMessage(refusal.code, refusal.params, request.language)), refusal.headers);
}

/** A POST of a signed-in page: from this origin, with the session's token; else the answer to give. */
export async function signedInForm(request: PageRequest): Promise<WebSession | Response> {
  const form = await readForm(request);
  if (!request.session) return redirect(request, '/signin');
  if (!WebSignIn.csrfMatches(request.session, form.get('csrf'))) {
    return respond(request, 403, messagePage(request.context, request.t('account'), request.t('forbiddenForm')));
  }
  return request.session;
}

export interface PageRequest {
  event: H3Event;
  req: IncomingMessage;
  session: WebSession | null;
  language: Language;
  t: Translate;
  context: PageContext;
  secure: boolean;
  /** A language chosen by `?lang=`, to keep in a cookie. */
  chosenLanguage: Language | null;
  publicOrigin: string;
  /** See PageContext.base. */
  base: string;
  form?: URLSearchParams;
}

export class FormRefused extends Error {
  constructor(readonly status: 403 | 413) {
    super('form refused');
  }
}

/** A page's request as far as it can be read without the store: signed out until `signIn`. */
function pageRequest(event: H3Event, req: IncomingMessage, deps: PageDeps, kept: string | undefined): PageRequest {
  const url = new URL(event.req.url);
  const asked = url.searchParams.get('lang');
  const chosenLanguage = (LANGUAGES as readonly string[]).includes(asked ?? '') ? asked as Language : null;
  const language = chosenLanguage ?? ((LANGUAGES as readonly string[]).includes(kept ?? '') ? kept as Language : negotiateLanguage(event.req.headers.get('accept-language')));
  const publicOrigin = deps.publicOrigin(req);
  const t = translator(language);
  const base = deps.basePath?.() ?? '';
  return {
    event, req, session: null, language, t, chosenLanguage, publicOrigin, base,
    secure: publicOrigin.startsWith('https:') || url.protocol === 'https:',
    context: { language, t, base, path: base + url.pathname, session: null },
  };
}

function signIn(request: PageRequest, session: WebSession | null): void {
  if (!session) return;
  request.session = session;
  request.context.session = { csrf: session.csrf, accountName: session.account.name || session.account.id, admin: session.account.role === 'admin' };
}

/** Whether the request comes from a page of this server: the origin it reached, or its public one (see sameOrigin). */
export function fromOwnPage(request: PageRequest): boolean {
  return sameOrigin(request.event.req.headers, [new URL(request.event.req.url).origin, request.publicOrigin]);
}

/** The POST's form, read at most FORM_LIMIT_BYTES, refused unless it comes from a page of this origin. */
export async function readForm(request: PageRequest): Promise<URLSearchParams> {
  if (request.form) return request.form;
  if (!fromOwnPage(request)) throw new FormRefused(403);
  const declared = Number(request.event.req.headers.get('content-length') ?? '0');
  if (declared > FORM_LIMIT_BYTES) throw new FormRefused(413);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT_BYTES) throw new FormRefused(413);
    chunks.push(chunk as Buffer);
  }
  request.form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  return request.form;
}

export function headersOf(request: PageRequest, extra: Record<string, string>): Headers {
  const headers = new Headers({ ...PAGE_HEADERS, 'content-language': request.language, vary: 'Cookie, Accept-Language', ...extra });
  if (request.chosenLanguage) headers.append('set-cookie', languageCookie(request.chosenLanguage, request.base));
  return headers;
}

export function respond(request: PageRequest, status: number, body: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: headersOf(request, { 'content-type': 'text/html; charset=utf-8', ...extra }) });
}

/** 303: a POST's answer is a GET of the next page (reloading it sends nothing again). `path` is the pages' own, without the base. */
export function redirect(request: PageRequest, path: string, extra: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: headersOf(request, { location: request.base + path, ...extra }) });
}
