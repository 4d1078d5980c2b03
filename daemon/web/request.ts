import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import { negotiateLanguage } from '../../src/errors/negotiate.ts';
import { LANGUAGES, type Language } from '../../src/errors/messages.ts';
import { WebSignIn, type WebSession } from '../../src/sign-in/web-sign-in.ts';
import { messagePage, type PageContext } from './pages.ts';
import { cookiePath, LANGUAGE_COOKIE, PAGE_HEADERS, readCookies, sameOrigin, SESSION_COOKIE } from './security.ts';
import { translator, type Translate } from './text.ts';
import { nodeRequest } from '../http/node-request.ts';

/** What a page's request needs from the daemon. */
export interface PageDeps {
  signIn: WebSignIn;
  /** The public origin of this request (configured, or a trusted proxy's), besides the Host it came to. */
  publicOrigin: (req: IncomingMessage) => string;
  /** The path the pages are served under ('' at the host's root), from public_url; read at each request (SIGHUP may change it). */
  basePath?: () => string;
  /** Called once per request when it is answered (logs, metrics). */
  done?: (route: string, status: number, started: number, req: IncomingMessage | undefined) => void;
}

/** A form is a handful of fields: anything larger is not one of ours. */
const FORM_LIMIT_BYTES = 16 * 1024;

/**
 * Runs a page's handler with its request read (session, language), answering a refused form
 * in words, and reports the answer once.
 */
export function pageHandler(deps: PageDeps) {
  return async (event: H3Event, route: string, handler: (request: PageRequest) => Promise<Response>): Promise<Response> => {
    const started = performance.now();
    const req = nodeRequest(event)!;
    const request = await pageRequest(event, req, deps);
    let response: Response;
    try {
      response = await handler(request);
    } catch (error) {
      if (!(error instanceof FormRefused)) throw error;
      response = respond(request, error.status, messagePage(request.context, request.t('title'), request.t('forbiddenForm')));
    }
    deps.done?.(route, response.status, started, req);
    return response;
  };
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

async function pageRequest(event: H3Event, req: IncomingMessage, deps: PageDeps): Promise<PageRequest> {
  const url = new URL(event.req.url);
  const cookies = readCookies(event.req.headers.get('cookie'));
  const asked = url.searchParams.get('lang');
  const chosenLanguage = (LANGUAGES as readonly string[]).includes(asked ?? '') ? asked as Language : null;
  const kept = cookies.get(LANGUAGE_COOKIE);
  const language = chosenLanguage ?? ((LANGUAGES as readonly string[]).includes(kept ?? '') ? kept as Language : negotiateLanguage(event.req.headers.get('accept-language')));
  const session = await deps.signIn.session(cookies.get(SESSION_COOKIE));
  const publicOrigin = deps.publicOrigin(req);
  const t = translator(language);
  const base = deps.basePath?.() ?? '';
  return {
    event, req, session, language, t, chosenLanguage, publicOrigin, base,
    secure: publicOrigin.startsWith('https:') || url.protocol === 'https:',
    context: { language, t, base, path: base + url.pathname, session: session ? { csrf: session.csrf, accountName: session.account.name || session.account.id, admin: session.account.role === 'admin' } : null },
  };
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
  if (request.chosenLanguage) headers.append('set-cookie', `${LANGUAGE_COOKIE}=${request.chosenLanguage}; Path=${cookiePath(request.base)}; SameSite=Lax; Max-Age=31536000`);
  return headers;
}

export function respond(request: PageRequest, status: number, body: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: headersOf(request, { 'content-type': 'text/html; charset=utf-8', ...extra }) });
}

/** 303: a POST's answer is a GET of the next page (reloading it sends nothing again). `path` is the pages' own, without the base. */
export function redirect(request: PageRequest, path: string, extra: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: headersOf(request, { location: request.base + path, ...extra }) });
}
