import type { H3 } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import { renderMessage } from '../../src/errors/messages.ts';
import { isConversionId } from '../../src/model/ids.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { ACTIVE_STATUSES, STATUSES, type ConversionStatus } from '../../src/model/status.ts';
import { resultResponse } from '../http/result-download.ts';
import { conversionsPage } from './conversion-pages.ts';
import { messagePage } from './pages.ts';
import { pageCallHandler, pageHandler, redirect, respond, signedInForm, type PageDeps, type PageRequest } from './request.ts';
import { PAGE_HEADERS } from './security.ts';

/** Rows a page shows. */
const PAGE_SIZE = '20';
/** Ids one live update may ask for (a page's rows). */
const LIVE_IDS = 50;

/**
 * The conversions page: the account's conversions, filtered by status, a page at a
 * time; cancel, delete and download as the API allows them (the same service calls, so the same
 * rules: another account's conversion is as absent as one that never was); and the JSON the page's
 * script polls for the progress of running ones.
 */
export function registerConversionPages(app: H3, deps: PageDeps & { system: ConversionSystem }): void {
  const page = pageHandler(deps);
  const call = pageCallHandler(deps);
  const { conversions } = deps.system;

  const show = async (request: PageRequest, status: number, extra: { notice?: string; error?: string } = {}) => {
    const query = new URL(request.event.req.url).searchParams;
    const filter = STATUSES.includes(query.get('status') as ConversionStatus) ? query.get('status') as ConversionStatus : null;
    const cursor = query.get('cursor') ?? undefined;
    try {
      const listed = await conversions.list(request.session!.account, { status: filter ?? undefined, cursor, limit: PAGE_SIZE });
      return respond(request, status, conversionsPage(request.context, { conversions: listed.data, status: filter, nextCursor: listed.next_cursor, older: cursor !== undefined, ...extra }));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // A cursor that is not one of ours: the newest page, said in words.
      const listed = await conversions.list(request.session!.account, { status: filter ?? undefined, limit: PAGE_SIZE });
      return respond(request, 400, conversionsPage(request.context, {
        conversions: listed.data, status: filter, nextCursor: listed.next_cursor, older: false, error: renderMessage(error.code, error.params, request.language),
      }));
    }
  };

  app.on('GET', '/conversions', (event) => page(event, '/conversions', async (request) => (request.session ? show(request, 200) : redirect(request, '/signin'))));

  app.on('POST', '/conversions/:id/delete', (event) => page(event, '/conversions/:id/delete', async (request) => {
    const session = await signedInForm(request);
    if (session instanceof Response) return session;
    try {
      const ended = await conversions.delete(session.account, event.context.params?.id ?? '');
      const name = ended.original_name;
      return show(request, 200, { notice: request.t(ended.status === 'cancelled' ? 'cancelled' : 'removed', { name }) });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return show(request, error.status, { error: renderMessage(error.code, error.params, request.language) });
    }
  }));

  app.on('GET', '/conversions/:id/download', (event) => page(event, '/conversions/:id/download', async (request) => {
    if (!request.session) return redirect(request, '/signin');
    try {
      return await resultResponse(await conversions.download(request.session.account, event.context.params?.id ?? ''), null, false);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return respond(request, error.status, messagePage(request.context, request.t('conversions'), renderMessage(error.code, error.params, request.language)));
    }
  }));

  // What the page's script polls: status and progress of the session's own conversions by id.
  app.on('GET', '/web/api/conversions', (event) => call(event, '/web/api/conversions', async (request) => {
    if (!request.session) return new Response(JSON.stringify({ error: 'signed_out' }), { status: 401, headers: { ...PAGE_HEADERS, 'content-type': 'application/json' } });
    const ids = (new URL(event.req.url).searchParams.get('ids') ?? '').split(',').filter(isConversionId).slice(0, LIVE_IDS);
    const rows = [];
    for (const id of ids) {
      const record = await conversions.get(request.session.account, id).catch(() => null);
      if (record) rows.push({ id, status: record.status, active: ACTIVE_STATUSES.has(record.status), progress: record.progress, label: request.t(`status_${record.status}`) });
    }
    return new Response(JSON.stringify({ data: rows }), { status: 200, headers: { ...PAGE_HEADERS, 'content-type': 'application/json; charset=utf-8' } });
  }));
}
