import type { H3 } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import { isPlanId } from '../../src/model/plan.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { messagePage } from './pages.ts';
import { ownerPage, type OwnerPageState } from './owner-page.ts';
import { pageHandler, redirect, respond, signedInForm, type PageDeps, type PageRequest } from './request.ts';

/**
 * The owner's page, for accounts with the admin role (the first account of a
 * box has it; `convd accounts update ID --role admin` gives it): every account (made here with its
 * sign-in link, its plan and credits changed, a new link), the maintenance switch, the engines as
 * `convd doctor` finds them, the queue and the workers. To anyone else the page does not exist.
 */
export function registerOwnerPage(app: H3, deps: PageDeps & { system: ConversionSystem }): void {
  const page = pageHandler(deps);
  const { system } = deps;
  const notFound = (request: PageRequest) => respond(request, 404, messagePage(request.context, request.t('owner'), request.t('notFound')));

  const show = async (request: PageRequest, status: number, extra: Partial<OwnerPageState> = {}) => respond(request, status, ownerPage(request.context, {
    accounts: await system.accounts.listWithCredits(),
    maintenance: await system.maintenance.state(),
    engines: system.registry.statuses,
    queue: { queued: system.queue.size, running: system.pool.active, workers: system.pool.workers },
    ...extra,
  }));

  /** A signed-in owner's POST (this origin, the session's token), or the answer to give instead. */
  const ownerForm = async (request: PageRequest) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    return session.account.role === 'admin' ? session : notFound(request);
  };

  const linkOf = async (request: PageRequest, accountId: string, name: string) => {
    const made = await deps.signIn.createLoginLink(accountId);
    return made ? { name, url: `${request.publicOrigin}${request.base}/link/${made.token}`, until: made.expiresAt } : undefined;
  };

  app.on('GET', '/admin', (event) => page(event, '/admin', async (request) => {
    if (!request.session) return redirect(request, '/signin');
    return request.session.account.role === 'admin' ? show(request, 200) : notFound(request);
  }));

  app.on('POST', '/admin/accounts', (event) => page(event, '/admin/accounts', async (request) => {
    const owner = await ownerForm(request);
    if (owner instanceof Response) return owner;
    const name = (request.form!.get('name') ?? '').trim().slice(0, 100);
    const plan = request.form!.get('plan') ?? 'free';
    if (name === '' || !isPlanId(plan)) return show(request, 422, { error: request.t('badValue', { problem: name === '' ? request.t('name') : request.t('plan') }) });
    const account = await system.accounts.createAccount({ plan, name });
    return show(request, 200, { notice: request.t('accountCreated', { name }), link: await linkOf(request, account.id, name) });
  }));

  app.on('POST', '/admin/accounts/:id', (event) => page(event, '/admin/accounts/:id', async (request) => {
    const owner = await ownerForm(request);
    if (owner instanceof Response) return owner;
    const account = await system.accounts.currentAccount(event.context.params?.id ?? '');
    if (!account) return notFound(request);
    const plan = request.form!.get('plan') ?? account.plan;
    const rawCredits = (request.form!.get('credits') ?? '').trim();
    const credits = rawCredits === '' ? undefined : Number(rawCredits);
    if (!isPlanId(plan) || (credits !== undefined && !(Number.isInteger(credits) && credits >= 0))) {
      return show(request, 422, { error: request.t('badValue', { problem: isPlanId(plan) ? request.t('creditsSet') : request.t('plan') }) });
    }
    await system.accounts.updateAccount(account.id, { plan, credits });
    return show(request, 200, { notice: request.t('accountChanged', { name: account.name || account.id }) });
  }));

  app.on('POST', '/admin/accounts/:id/login-link', (event) => page(event, '/admin/accounts/:id/login-link', async (request) => {
    const owner = await ownerForm(request);
    if (owner instanceof Response) return owner;
    const account = await system.accounts.currentAccount(event.context.params?.id ?? '');
    if (!account) return notFound(request);
    return show(request, 200, { link: await linkOf(request, account.id, account.name || account.id) });
  }));

  app.on('POST', '/admin/maintenance', (event) => page(event, '/admin/maintenance', async (request) => {
    const owner = await ownerForm(request);
    if (owner instanceof Response) return owner;
    // Without a Retry-After (the form to switch it off has none) the one set before stays.
    const retryAfter = request.form!.get('retry_after');
    try {
      await system.maintenance.set(request.form!.get('enabled') === 'on', retryAfter === null ? undefined : Number(retryAfter));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return show(request, 422, { error: request.t('badValue', { problem: request.t('retryAfter') }) });
    }
    return show(request, 200);
  }));
}
