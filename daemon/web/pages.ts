import type { Language } from '../../src/errors/messages.ts';
import type { AccountView } from '../../src/model/account-view.ts';
import type { ApiKeyRecord } from '../../src/model/account.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import { PASSWORD_LENGTH } from '../../src/sign-in/password.ts';
import type { DayUsage } from '../../src/service/daily-usage.ts';
import { ASSETS } from './assets.ts';
import { usageCharts } from './chart.ts';
import { html, type Html } from './html.ts';
import type { PageContext } from './page-context.ts';

/** The pages' callers take the context's type with `layout` from here. */
export type { PageContext } from './page-context.ts';

export function layout(context: PageContext, title: string, body: Html): string {
  const { t, language, session } = context;
  const other: Language = language === 'en' ? 'de' : 'en';
  return html`<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} – ${t('title')}</title>
<link rel="icon" href="${context.base}/favicon.ico">
<link rel="stylesheet" href="${context.base}${ASSETS.style.path}">
<script src="${context.base}${ASSETS.script.path}" defer></script>
</head>
<body data-base="${context.base}">
<a class="skip" href="#main">${t('skip')}</a>
<header class="top">
<a class="brand" href="${context.base}/">convd</a>
<nav class="top" aria-label="${t('account')}">
${session ? html`<a href="${context.base}/convert">${t('convert')}</a> <a href="${context.base}/conversions">${t('conversions')}</a> <a href="${context.base}/account">${t('account')}</a>${session.admin ? html` <a href="${context.base}/admin">${t('owner')}</a>` : ''}` : ''}
<a href="${context.path}?lang=${other}" lang="${other}" hreflang="${other}">${other === 'de' ? 'Deutsch' : 'English'}</a>
${session ? html`<span>${session.accountName}</span>
<form class="inline" method="post" action="${context.base}/signout"><input type="hidden" name="csrf" value="${session.csrf}"><button class="secondary" type="submit">${t('signOut')}</button></form>` : ''}
</nav>
</header>
<main id="main">
${body}
</main>
</body>
</html>
`.text;
}

export function problem(message: string | null): Html | '' {
  return message ? html`<p class="error" role="alert">${message}</p>` : '';
}

export function signInPage(context: PageContext, state: { name?: string; error?: string | null } = {}): string {
  const { t } = context;
  return layout(context, t('signIn'), html`<h1>${t('signIn')}</h1>
${problem(state.error ?? null)}
<form class="stack" method="post" action="${context.base}/signin">
<div><label for="name">${t('accountName')}</label><input id="name" name="name" type="text" autocomplete="username" required value="${state.name ?? ''}"></div>
<div><label for="password">${t('password')}</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<div><button type="submit">${t('signIn')}</button></div>
</form>`);
}

export function setPasswordPage(context: PageContext, state: { token: string; accountName: string; error?: string | null }): string {
  const { t } = context;
  return layout(context, t('setPassword'), html`<h1>${t('setPassword')}</h1>
<p>${t('setPasswordIntro', { name: state.accountName, min: PASSWORD_LENGTH.min })}</p>
${problem(state.error ?? null)}
<form class="stack" method="post" action="${context.base}/link/${state.token}">
<input type="text" name="username" autocomplete="username" value="${state.accountName}" hidden>
<div><label for="password">${t('password')}</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}" required></div>
<div><label for="repeated">${t('passwordAgain')}</label><input id="repeated" name="repeated" type="password" autocomplete="new-password" minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}" required></div>
<div><button type="submit">${t('savePassword')}</button></div>
</form>`);
}

export function messagePage(context: PageContext, title: string, message: string): string {
  return layout(context, title, html`<h1>${title}</h1><p class="error" role="alert">${message}</p><p><a href="${context.base}/">convd</a></p>`);
}

export interface AccountPageState {
  view: AccountView;
  usage: DayUsage[];
  reserved: number;
  keys: ApiKeyRecord[];
  deliveries: DeliveryRecord[];
  /** Shown once: a key just made, the secret asked for. */
  newKey?: string;
  secret?: string;
  notice?: string | null;
  error?: string | null;
}

export function date(iso: string, language: Language): string {
  return new Date(iso).toLocaleDateString(language === 'de' ? 'de-DE' : 'en-GB', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
}

export function accountPage(context: PageContext, state: AccountPageState): string {
  const { t, language, session } = context;
  const { view } = state;
  const csrf = html`<input type="hidden" name="csrf" value="${session!.csrf}">`;
  const metered = view.credits.type !== 'unmetered';
  const number = (n: number) => n.toLocaleString(language === 'de' ? 'de-DE' : 'en-US');
  return layout(context, t('account'), html`<h1>${t('account')}: ${session!.accountName}</h1>
${state.notice ? html`<p class="notice" role="status">${state.notice}</p>` : ''}
${problem(state.error ?? null)}
${state.newKey ? html`<section class="panel" aria-labelledby="new-key">
<h2 id="new-key">${t('keyCreated')}</h2>
<p>${t('keyCreatedIntro')}</p>
<code class="secret" id="new-key-value">${state.newKey}</code>
<p><button type="button" data-copy="new-key-value" data-copied="${t('copied')}">${t('copy')}</button></p>
</section>` : ''}
<section class="panel" aria-labelledby="credits">
<h2 id="credits">${t('plan')}: ${view.plan.name}</h2>
<dl class="facts">
<dt>${t('remaining')}</dt><dd>${metered ? number(view.credits.remaining ?? 0) : t('unmetered')}</dd>
${metered ? html`<dt>${t('allowance')}</dt><dd>${number(view.credits.monthly_allowance ?? 0)}</dd>
<dt>${t('reserved')}</dt><dd>${number(state.reserved)}</dd>
<dt>${t('resets')}</dt><dd>${view.credits.resets_at ? date(view.credits.resets_at, language) : ''}</dd>` : ''}
</dl>
<h2>${t('limits')}</h2>
<dl class="facts">
<dt>${t('maxUpload')}</dt><dd>${t('megabytes', { n: number(view.limits.max_upload_mb) })}</dd>
<dt>${t('perWindow', { seconds: view.limits.window_seconds })}</dt><dd>${number(view.limits.conversions_per_window)}</dd>
<dt>${t('concurrent')}</dt><dd>${number(view.limits.concurrent_conversions)}</dd>
<dt>${t('active')}</dt><dd>${number(view.limits.active_conversions)}</dd>
<dt>${t('perMinute')}</dt><dd>${number(view.limits.requests_per_minute)}</dd>
<dt>${t('resultTtl')}</dt><dd>${t('hours', { n: view.limits.result_ttl_hours })}</dd>
<dt>${t('timeLimit')}</dt><dd>${Object.entries(view.limits.time_limits).map(([engine, seconds]) => `${engine} ${t('seconds', { n: number(seconds) })}`).join(', ')}</dd>
${view.engine_time.allowance_seconds > 0 ? html`<dt>${t('engineTime')}</dt><dd>${t('engineTimeLeft', {
  remaining: number(view.engine_time.remaining_seconds ?? 0), allowance: number(view.engine_time.allowance_seconds), time: date(view.engine_time.resets_at, language),
})}</dd>` : ''}
</dl>
</section>
<section class="panel" aria-labelledby="usage">
${usageCharts(context, state.usage)}
</section>
<section class="panel" aria-labelledby="keys">
<h2 id="keys">${t('keys')}</h2>
<p>${t('keysIntro')}</p>
${state.keys.length === 0 ? html`<p>${t('noKeys')}</p>` : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">${t('name')}</th><th scope="col">${t('prefix')}</th><th scope="col">${t('scopes')}</th><th scope="col">${t('created')}</th><th scope="col">${t('lastUsed')}</th><th scope="col">${t('status')}</th><th scope="col"><span class="skip">${t('revoke')}</span></th></tr></thead>
<tbody>
${state.keys.map((key) => html`<tr>
<td>${key.name ?? ''}</td><td><code>${key.prefix}…</code></td><td>${key.scopes.join(', ')}</td><td>${date(key.created_at, language)}</td>
<td>${key.last_used_at ? date(key.last_used_at, language) : t('never')}</td>
<td>${key.revoked_at ? t('revokedOn', { date: date(key.revoked_at, language) }) : t('activeKey')}</td>
<td>${key.revoked_at ? '' : html`<form class="inline" method="post" action="${context.base}/account/keys/${key.id}/revoke">${csrf}<button class="danger" type="submit" aria-label="${t('revokeLabel', { prefix: key.prefix })}">${t('revoke')}</button></form>`}</td>
</tr>`)}
</tbody></table></div>`}
<h2>${t('newKey')}</h2>
<form method="post" action="${context.base}/account/keys">
${csrf}
<p><label for="key-name">${t('keyName')}</label><input id="key-name" name="name" type="text" maxlength="100"></p>
<fieldset><legend>${t('scopes')}</legend>
<label><input type="checkbox" name="scope" value="read" checked> ${t('scopeRead')}</label>
<label><input type="checkbox" name="scope" value="convert" checked> ${t('scopeConvert')}</label>
<label><input type="checkbox" name="scope" value="delete"> ${t('scopeDelete')}</label>
</fieldset>
<p><button type="submit">${t('createKey')}</button></p>
</form>
</section>
<section class="panel" aria-labelledby="webhook">
<h2 id="webhook">${t('webhookSecret')}</h2>
<p>${t('webhookIntro')}</p>
${state.secret ? html`<p>${t('secretIs')}:</p><code class="secret" id="secret-value">${state.secret}</code>
<p><button type="button" data-copy="secret-value" data-copied="${t('copied')}">${t('copy')}</button></p>` : ''}
<form class="inline" method="post" action="${context.base}/account/webhook-secret">${csrf}<button class="secondary" type="submit">${t('reveal')}</button></form>
<form class="inline" method="post" action="${context.base}/account/webhook-secret/rotate">${csrf}<button class="danger" type="submit">${t('rotate')}</button></form>
<p>${t('rotateIntro')}</p>
<h3 id="deliveries">${t('deliveries')}</h3>
<p>${t('deliveriesIntro')}</p>
${state.deliveries.length === 0 ? html`<p>${t('noDeliveries')}</p>` : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">${t('event')}</th><th scope="col">${t('status')}</th><th scope="col">${t('attempts')}</th><th scope="col">${t('actions')}</th></tr></thead>
<tbody>${state.deliveries.map((delivery) => html`<tr id="delivery-${delivery.id}">
<td>${delivery.event}<br><small><code>${delivery.conversion_id}</code></small></td>
<td>${t(`delivery_${delivery.status}`)}${delivery.status === 'pending' && delivery.next_attempt_at ? html`<br><small>${t('nextAttempt', { when: delivery.next_attempt_at })}</small>` : ''}</td>
<td><ol class="attempts">${delivery.attempts.map((attempt) => html`<li>${attempt.at.slice(0, 19).replace('T', ' ')}: ${attempt.status_code ?? attempt.error ?? ''}</li>`)}</ol></td>
<td><form class="inline" method="post" action="${context.base}/account/deliveries/${delivery.id}/redeliver">${csrf}<button class="secondary" type="submit" aria-label="${t('redeliverLabel', { id: delivery.id.slice(0, 8) })}">${t('redeliver')}</button></form></td>
</tr>`)}</tbody></table></div>`}
</section>`);
}
