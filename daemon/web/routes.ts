import type { IncomingMessage } from 'node:http';
import type { H3 } from 'h3';
import { SCOPES, type Scope } from '../../src/model/account.ts';
import { PASSWORD_LENGTH } from '../../src/sign-in/password.ts';
import { SESSION_LIFETIME_MS } from '../../src/sign-in/web-sign-in.ts';
import { ASSETS } from './assets.ts';
import { dropSession, keepSession } from './cookies.ts';
import { registerConversionPages } from './conversion-routes.ts';
import { registerConvertPage } from './convert-routes.ts';
import { registerOwnerPage } from './owner-routes.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import type { WebApiBridge } from '../app.ts';
import { accountPage, messagePage, setPasswordPage, signInPage, type AccountPageState } from './pages.ts';
import { pageHandler, readForm, redirect, respond, signedInForm, type PageDeps, type PageRequest } from './request.ts';
import { SignInFailures } from './sign-in-failures.ts';

export interface WebFaceDeps extends PageDeps {
  system: ConversionSystem;
  /** The client's address (a trusted proxy's X-Forwarded-For), for the sign-in limit. */
  clientAddress: (req: IncomingMessage) => string;
}

/** Deliveries the account page lists. */
const RECENT_DELIVERIES = 10;

/**
 * The web face's pages, on the daemon's own port beside /v1: sign-in by a one-time link
 * and a password, and the account page (credits, limits, API keys, the webhook secret). Pages are
 * rendered here, whole, with no client framework; every state-changing request is a POST from a
 * page of this origin carrying its session's token. A session never authenticates /v1 (which reads
 * only Authorization) and a key never a page (which read only the session cookie).
 */
export function registerWebFace(app: H3, deps: WebFaceDeps, api: WebApiBridge): void {
  const failures = new SignInFailures(deps.system.failureBuckets);
  const { accounts, deliveries: deliveryLog } = deps.system;

  const page = pageHandler(deps);
  registerConversionPages(app, deps);
  registerConvertPage(app, deps, api);
  registerOwnerPage(app, deps);

  for (const asset of Object.values(ASSETS)) {
    app.on('GET', asset.path, () => new Response(asset.body, {
      headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' },
    }));
  }

  // Browsers ask for it on every first visit: nothing, rather than a 404 in every console.
  app.on('GET', '/favicon.ico', () => new Response(null, { status: 204, headers: { 'cache-control': 'public, max-age=86400' } }));

  app.on('GET', '/', (event) => page(event, '/', async (request) => redirect(request, request.session ? '/account' : '/signin')));

  app.on('GET', '/signin', (event) => page(event, '/signin', async (request) => (request.session
    ? redirect(request, '/account')
    : respond(request, 200, signInPage(request.context)))));

  app.on('POST', '/signin', (event) => page(event, '/signin', async (request) => {
    const form = await readForm(request);
    const name = (form.get('name') ?? '').trim();
    const password = form.get('password') ?? '';
    const address = deps.clientAddress(request.req);
    const wait = await failures.take(address, name);
    if (wait !== null) {
      return respond(request, 429, signInPage(request.context, { name, error: request.t('signInLimited', { seconds: wait }) }), { 'retry-after': String(wait) });
    }
    const opened = await deps.signIn.signIn(name, password);
    if (!opened) return respond(request, 401, signInPage(request.context, { name, error: request.t('signInFailed') }));
    // Best effort: the session exists already, and a lost give-back only counts one failure too many.
    await failures.succeeded(address, name).catch(() => undefined);
    keepSession(event, request, opened.session, SESSION_LIFETIME_MS / 1000);
    return redirect(request, '/account');
  }));

  app.on('GET', '/link/:token', (event) => page(event, '/link/:token', async (request) => {
    const token = event.context.params?.token ?? '';
    const account = await deps.signIn.linkAccount(token);
    if (!account) return respond(request, 404, messagePage(request.context, request.t('setPassword'), request.t('linkInvalid')));
    return respond(request, 200, setPasswordPage(request.context, { token, accountName: account.name || account.id }));
  }));

  app.on('POST', '/link/:token', (event) => page(event, '/link/:token', async (request) => {
    const token = event.context.params?.token ?? '';
    const form = await readForm(request);
    const outcome = await deps.signIn.setPassword(token, form.get('password') ?? '', form.get('repeated') ?? '');
    if (typeof outcome !== 'string') {
      keepSession(event, request, outcome.session, SESSION_LIFETIME_MS / 1000);
      return redirect(request, '/account');
    }
    if (outcome === 'link_invalid') return respond(request, 404, messagePage(request.context, request.t('setPassword'), request.t('linkInvalid')));
    const account = await deps.signIn.linkAccount(token);
    const error = outcome === 'too_short' ? request.t('tooShort', { min: PASSWORD_LENGTH.min }) : outcome === 'too_long' ? request.t('tooLong', { max: PASSWORD_LENGTH.max }) : request.t('mismatch');
    return respond(request, 422, setPasswordPage(request.context, { token, accountName: account?.name || account?.id || '', error }));
  }));

  app.on('POST', '/signout', (event) => page(event, '/signout', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    await deps.signIn.signOut(session);
    dropSession(event, request);
    return redirect(request, '/signin');
  }));

  const showAccount = async (request: PageRequest, status: number, extra: Partial<AccountPageState> = {}) => {
    const account = request.session!.account;
    const [view, balance, keys, usage, deliveries] = await Promise.all([
      accounts.view(account), accounts.balance(account), accounts.keysOf(account.id), accounts.usageByDay(account.id),
      deliveryLog.recentOf(account.id, RECENT_DELIVERIES),
    ]);
    keys.sort((a, b) => (a.revoked_at === null) === (b.revoked_at === null) ? b.created_at.localeCompare(a.created_at) : a.revoked_at === null ? -1 : 1);
    return respond(request, status, accountPage(request.context, { view, usage, deliveries, reserved: balance.reserved, keys, ...extra }));
  };

  app.on('GET', '/account', (event) => page(event, '/account', async (request) => (request.session ? showAccount(request, 200) : redirect(request, '/signin'))));

  app.on('POST', '/account/keys', (event) => page(event, '/account/keys', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    const scopes = [...new Set(request.form!.getAll('scope'))].filter((scope): scope is Scope => (SCOPES as readonly string[]).includes(scope));
    if (scopes.length === 0) return showAccount(request, 422, { error: request.t('noScope') });
    const made = await accounts.createKey(session.account.id, scopes, (request.form!.get('name') ?? '').trim() || undefined);
    return showAccount(request, 200, { newKey: made.key });
  }));

  app.on('POST', '/account/keys/:id/revoke', (event) => page(event, '/account/keys/:id/revoke', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    const key = await accounts.revokeKeyOf(session.account.id, event.context.params?.id ?? '');
    if (!key) return respond(request, 404, messagePage(request.context, request.t('account'), request.t('notFound')));
    return showAccount(request, 200, { notice: request.t('keyRevoked', { prefix: key.prefix }) });
  }));

  app.on('POST', '/account/deliveries/:id/redeliver', (event) => page(event, '/account/deliveries/:id/redeliver', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    const delivery = await deliveryLog.ownedBy(session.account.id, event.context.params?.id ?? '');
    if (!delivery) return respond(request, 404, messagePage(request.context, request.t('account'), request.t('notFound')));
    const sent = await deps.system.webhooks.redeliver(delivery.id);
    const last = sent?.attempts[sent.attempts.length - 1];
    const outcome = last ? String(last.status_code ?? last.error ?? '') : '';
    return showAccount(request, 200, { notice: request.t('redelivered', { id: delivery.id.slice(0, 8), outcome }) });
  }));

  app.on('POST', '/account/webhook-secret', (event) => page(event, '/account/webhook-secret', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    return showAccount(request, 200, { secret: await accounts.webhookSecret(session.account.id, false) });
  }));

  app.on('POST', '/account/webhook-secret/rotate', (event) => page(event, '/account/webhook-secret/rotate', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    const secret = await accounts.webhookSecret(session.account.id, true);
    return showAccount(request, 200, { secret, notice: request.t('secretRotated') });
  }));
}
