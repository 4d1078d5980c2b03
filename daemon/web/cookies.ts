import { deleteCookie, getCookie, setCookie, type H3Event, type HTTPEvent } from 'h3';
import type { Language } from '../../src/errors/messages.ts';

/** The pages' two cookies: the signed-in session, and a language chosen with `?lang=`. */
const SESSION_COOKIE = 'convd_session';
const LANGUAGE_COOKIE = 'convd_lang';

/** h3 does not export the type by name. */
type CookieOptions = NonNullable<Parameters<typeof setCookie>[3]>;

/** A year: a chosen language outlives any session. */
const LANGUAGE_MAX_AGE_SECONDS = 365 * 24 * 3600;

/** Where the page was asked for: whether over https (directly or behind a trusted proxy), and its path. */
export interface CookieScope {
  secure: boolean;
  /** The path the pages are served under ('' at the host's root). */
  base: string;
}

/** The session's token the request carries, if any. */
export function sessionToken(event: HTTPEvent): string | undefined {
  return getCookie(event, SESSION_COOKIE);
}

/** The language an earlier `?lang=` chose, if any (not checked: the caller knows the languages). */
export function keptLanguage(event: HTTPEvent): string | undefined {
  return getCookie(event, LANGUAGE_COOKIE);
}

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
 * it along), Secure where the page is served over https, for the pages' path only. Staged on the
 * event: h3 adds it to the answer, which for a session is always a redirect (a status under 400;
 * h3 leaves staged cookies off an error's answer).
 */
function sessionOptions(scope: CookieScope): CookieOptions {
  return { path: cookiePath(scope.base), httpOnly: true, sameSite: 'strict', secure: scope.secure };
}

export function keepSession(event: H3Event, scope: CookieScope, token: string, maxAgeSeconds: number): void {
  setCookie(event, SESSION_COOKIE, token, { ...sessionOptions(scope), maxAge: maxAgeSeconds });
}

/** Tells the browser to drop the session cookie (the session itself ends on the server). */
export function dropSession(event: H3Event, scope: CookieScope): void {
  deleteCookie(event, SESSION_COOKIE, sessionOptions(scope));
}

/**
 * The Set-Cookie value that keeps a language chosen with `?lang=`. Written by hand, not with h3's
 * setCookie: that stages the cookie on the event, and h3 leaves staged headers off any answer of
 * status 400 or more, while a page asked for in a new language may answer 404 or 422 and must keep
 * the choice all the same. So it goes straight into the answer's own headers.
 */
export function languageCookie(language: Language, base: string): string {
  return `${LANGUAGE_COOKIE}=${language}; Path=${cookiePath(base)}; SameSite=Lax; Max-Age=${LANGUAGE_MAX_AGE_SECONDS}`;
}

/** The pages' cookies go to the pages' path only (the host's root, or the path convd is served under). */
function cookiePath(base: string): string {
  return base === '' ? '/' : base;
}
