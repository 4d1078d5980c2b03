import { ACTIVE_STATUSES, STATUSES, type ConversionStatus } from '../../src/model/status.ts';
import type { ConversionWarning, PublicConversion } from '../../src/model/conversion.ts';
import { html, type Html } from './html.ts';
import { layout, problem, type PageContext } from './pages.ts';
import type { TextKey } from './text.ts';

export interface ConversionsPageState {
  conversions: PublicConversion[];
  status: ConversionStatus | null;
  nextCursor: string | null;
  /** This page is not the first (a link back to the newest). */
  older: boolean;
  notice?: string | null;
  error?: string | null;
}

const statusKey = (status: ConversionStatus) => `status_${status}` as TextKey;

function when(iso: string, context: PageContext): string {
  return new Date(iso).toLocaleString(context.language === 'de' ? 'de-DE' : 'en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }) + ' UTC';
}

/** A progress bar that is text too (no colour needed to read it). */
function progressOf(conversion: PublicConversion): Html {
  const value = conversion.progress;
  if (value === null || !ACTIVE_STATUSES.has(conversion.status)) return html``;
  return html`<progress max="100" value="${value}" aria-label="${conversion.original_name}">${value} %</progress> <span>${value} %</span>`;
}

/** A warning in the page's language (the API's `message` is English). */
function warningText(warning: ConversionWarning, t: PageContext['t']): string {
  switch (warning.code) {
    case 'font_substituted': return t('fontSubstituted', { font: warning.font, used: warning.used });
    case 'metadata_dropped': return t('metadataDropped', { field: warning.field });
    case 'content_left_out': return t('contentLeftOut', { reference: warning.reference });
  }
}

function actions(conversion: PublicConversion, context: PageContext): Html {
  const { t, session } = context;
  const csrf = html`<input type="hidden" name="csrf" value="${session!.csrf}">`;
  const name = conversion.original_name;
  if (ACTIVE_STATUSES.has(conversion.status)) {
    return html`<form class="inline" method="post" action="${context.base}/conversions/${conversion.id}/delete">${csrf}<button class="danger" type="submit" aria-label="${t('cancelLabel', { name })}">${t('cancel')}</button></form>`;
  }
  if (conversion.status === 'succeeded') {
    return html`<a href="${context.base}/conversions/${conversion.id}/download" aria-label="${t('downloadLabel', { name })}">${t('download')}</a>
<form class="inline" method="post" action="${context.base}/conversions/${conversion.id}/delete">${csrf}<button class="danger" type="submit" aria-label="${t('removeLabel', { name })}">${t('remove')}</button></form>`;
  }
  return html``;
}

/**
 * The account's conversions, newest first, by status, a page at a time. Rows of running ones
 * carry `data-live`: the page's script asks /web/api/conversions for them every two seconds and
 * reloads the page when one ended (its actions change), so progress moves without a reload.
 */
export function conversionsPage(context: PageContext, state: ConversionsPageState): string {
  const { t } = context;
  const live = state.conversions.filter((c) => ACTIVE_STATUSES.has(c.status)).map((c) => c.id);
  return layout(context, t('conversions'), html`<h1>${t('conversions')}</h1>
<p>${t('conversionsIntro')}</p>
${state.notice ? html`<p class="notice" role="status">${state.notice}</p>` : ''}
${problem(state.error ?? null)}
<form method="get" action="${context.base}/conversions" class="filters">
<label for="status">${t('filter')}</label>
<select id="status" name="status">
<option value="">${t('allStatuses')}</option>
${STATUSES.map((status) => html`<option value="${status}"${state.status === status ? html` selected` : ''}>${t(statusKey(status))}</option>`)}
</select>
<button class="secondary" type="submit">${t('show')}</button>
</form>
${state.conversions.length === 0 ? html`<p>${t('noConversions')}</p>` : html`<div class="table-wrap"><table id="conversions"${live.length > 0 ? html` data-live="${live.join(',')}"` : ''}>
<thead><tr><th scope="col">${t('file')}</th><th scope="col">${t('conversion')}</th><th scope="col">${t('status')}</th><th scope="col">${t('progress')}</th><th scope="col">${t('created')}</th><th scope="col">${t('actions')}</th></tr></thead>
<tbody>
${state.conversions.map((c) => html`<tr id="row-${c.id}">
<td>${c.original_name}</td>
<td>${c.source} → ${c.target}</td>
<td data-status>${t(statusKey(c.status))}${c.error ? html`<br><small>${c.error.message}</small>` : ''}${(c.warnings ?? []).map((warning) => html`<br><small>${warningText(warning, context.t)}</small>`)}</td>
<td data-progress>${progressOf(c)}</td>
<td>${when(c.created_at, context)}</td>
<td>${actions(c, context)}</td>
</tr>`)}
</tbody></table></div>`}
<nav aria-label="${t('conversions')}">
${state.older ? html`<a href="${context.base}/conversions${state.status ? `?status=${state.status}` : ''}">${t('newest')}</a> ` : ''}
${state.nextCursor ? html`<a href="${context.base}/conversions?${new URLSearchParams({ ...(state.status ? { status: state.status } : {}), cursor: state.nextCursor }).toString()}">${t('older')}</a>` : ''}
</nav>`);
}
