import type { H3 } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import { WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import type { WebApiBridge } from '../app.ts';
import { json } from '../http/respond.ts';
import { convertPage } from './convert-page.ts';
import { fromOwnPage, pageCallHandler, pageHandler, redirect, respond, type PageDeps } from './request.ts';

/**
 * The convert page and the two calls its script makes: the targets and options of a source
 * (the formats listing, as /v1/formats/{source} gives it to this account) and a submission (the
 * very handler of POST /v1/conversions, through the bridge). A submission is a state change: it
 * must come from a page of this origin and carry the session's token in X-CSRF-Token.
 */
export function registerConvertPage(app: H3, deps: PageDeps & { system: ConversionSystem }, api: WebApiBridge): void {
  const page = pageHandler(deps);
  const call = pageCallHandler(deps);

  app.on('GET', '/convert', (event) => page(event, '/convert', async (request) => (request.session
    ? respond(request, 200, convertPage(request.context))
    : redirect(request, '/signin'))));

  app.on('GET', '/web/api/formats/:source', (event) => call(event, '/web/api/formats/:source', async (request) => {
    if (!request.session) throw new ApiError('unauthenticated');
    return json(200, deps.system.conversions.formatDetails(request.session.account, decodeURIComponent(event.context.params?.source ?? '')));
  }));

  app.on('POST', '/web/api/conversions', (event) => call(event, '/web/api/conversions', async (request, exchange) => {
    if (!request.session || !fromOwnPage(request) || !WebSignIn.csrfMatches(request.session, event.req.headers.get('x-csrf-token'))) {
      throw new ApiError(request.session ? 'forbidden' : 'unauthenticated', { params: { action: 'convert' } });
    }
    return api.submit(event, request.session.account, exchange);
  }));
}
