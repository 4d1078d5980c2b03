import type { EngineStatus } from '../../src/engines/types.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import { PLAN_IDS } from '../../src/model/plan.ts';
import type { Maintenance } from '../../src/service/maintenance.ts';
import { html } from './html.ts';
import { layout, problem, type PageContext } from './pages.ts';

export interface OwnerPageState {
  accounts: { record: AccountRecord; remaining: number | null }[];
  maintenance: Maintenance;
  engines: readonly EngineStatus[];
  queue: { queued: number; running: number; workers: number };
  /** A sign-in link just made: shown once. */
  link?: { name: string; url: string; until: string };
  notice?: string | null;
  error?: string | null;
}

/** The owner's page (an account with the admin role): accounts, the maintenance switch, engines, queue. */
export function ownerPage(context: PageContext, state: OwnerPageState): string {
  const { t, session } = context;
  const csrf = html`<input type="hidden" name="csrf" value="${session!.csrf}">`;
  const plans = (current: string) => PLAN_IDS.map((plan) => html`<option value="${plan}"${plan === current ? html` selected` : ''}>${plan}</option>`);
  const { maintenance } = state;
  return layout(context, t('owner'), html`<h1>${t('owner')}</h1>
<p>${t('ownerIntro')}</p>
${state.notice ? html`<p class="notice" role="status">${state.notice}</p>` : ''}
${problem(state.error ?? null)}
${state.link ? html`<section class="panel" aria-labelledby="link">
<h2 id="link">${t('loginLink')}</h2>
<p>${t('linkFor', { name: state.link.name, until: state.link.until })}</p>
<code class="secret" id="link-value">${state.link.url}</code>
<p><button type="button" data-copy="link-value" data-copied="${t('copied')}">${t('copy')}</button></p>
</section>` : ''}
<section class="panel" aria-labelledby="accounts">
<h2 id="accounts">${t('accounts')}</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">${t('name')}</th><th scope="col">${t('plan')}</th><th scope="col">${t('remaining')}</th><th scope="col">${t('role')}</th><th scope="col">${t('actions')}</th></tr></thead>
<tbody>
${state.accounts.map(({ record, remaining }) => {
    const name = record.name || record.id;
    return html`<tr>
<td>${name}<br><small><code>${record.id}</code></small></td>
<td>${record.plan}</td><td>${remaining === null ? t('unmetered') : remaining.toLocaleString('en-US')}</td>
<td>${record.role === 'admin' ? t('roleAdmin') : t('roleMember')}</td>
<td>
<form class="inline-form" method="post" action="${context.base}/admin/accounts/${record.id}">${csrf}
<label for="plan-${record.id}">${t('plan')}</label><select id="plan-${record.id}" name="plan">${plans(record.plan)}</select>
<label for="credits-${record.id}">${t('creditsSet')}</label><input id="credits-${record.id}" name="credits" type="number" min="0" step="1">
<button class="secondary" type="submit" aria-label="${t('changeLabel', { name })}">${t('change')}</button></form>
<form class="inline" method="post" action="${context.base}/admin/accounts/${record.id}/login-link">${csrf}<button class="secondary" type="submit" aria-label="${t('loginLinkLabel', { name })}">${t('loginLink')}</button></form>
</td></tr>`;
  })}
</tbody></table></div>
<h2>${t('newAccount')}</h2>
<form class="stack" method="post" action="${context.base}/admin/accounts">${csrf}
<div><label for="new-name">${t('name')}</label><input id="new-name" name="name" type="text" required maxlength="100"></div>
<div><label for="new-plan">${t('plan')}</label><select id="new-plan" name="plan">${plans('free')}</select></div>
<div><button type="submit">${t('createAccount')}</button></div>
</form>
</section>
<section class="panel" aria-labelledby="maintenance">
<h2 id="maintenance">${t('maintenance')}</h2>
<p>${maintenance.enabled ? t('maintenanceOn') : t('maintenanceOff')}</p>
<form method="post" action="${context.base}/admin/maintenance">${csrf}
<input type="hidden" name="enabled" value="${maintenance.enabled ? 'off' : 'on'}">
${maintenance.enabled ? '' : html`<label for="retry-after">${t('retryAfter')}</label><input id="retry-after" name="retry_after" type="number" min="1" value="${maintenance.retry_after}">`}
<button class="${maintenance.enabled ? 'secondary' : 'danger'}" type="submit">${maintenance.enabled ? t('switchOff') : t('switchOn')}</button>
</form>
</section>
<section class="panel" aria-labelledby="queue">
<h2 id="queue">${t('queue')}</h2>
<dl class="facts"><dt>${t('queued')}</dt><dd>${state.queue.queued}</dd><dt>${t('running')}</dt><dd>${state.queue.running}</dd><dt>${t('workers')}</dt><dd>${state.queue.workers}</dd></dl>
</section>
<section class="panel" aria-labelledby="engines">
<h2 id="engines">${t('engines')}</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">${t('engine')}</th><th scope="col">${t('available')}</th><th scope="col">${t('detail')}</th></tr></thead>
<tbody>${state.engines.map((engine) => html`<tr><td>${engine.name}</td><td>${engine.available ? t('yes') : t('no')}</td><td>${[engine.binary, engine.version, engine.detail].filter(Boolean).join(' · ')}</td></tr>`)}</tbody>
</table></div>
</section>`);
}
