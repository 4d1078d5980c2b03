/**
 * A page whose handler fails answers with a page (its status, its words in the page's language,
 * the pages' headers), not the API's JSON; the pages' script calls (under /web/api/) keep the
 * API's error shape. Either way the failure is reported once, and logged when no one planned it.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { H3 } from 'h3';
import { toNodeHandler } from 'h3/node';
import { ApiError } from '../../src/errors/api-error.ts';
import type { WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import { createPipeline, type RequestInfo } from '../../daemon/http/pipeline.ts';
import { pageCallHandler, pageHandler, type PageDeps } from '../../daemon/web/request.ts';

describe('failures on the web pages', () => {
  const reports: RequestInfo[] = [];
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  let sessionFails = false;
  let server: Server;
  let url: string;

  before(async () => {
    process.on('warning', onWarning);
    const signIn = {
      session: async () => {
        if (sessionFails) throw new Error('store unreachable');
        return null;
      },
    } as unknown as WebSignIn;
    const deps: PageDeps = { signIn, publicOrigin: () => 'http://127.0.0.1', basePath: () => '/convd', pipeline: createPipeline((info) => reports.push(info)) };
    const page = pageHandler(deps);
    const call = pageCallHandler(deps);
    const app = new H3({ silent: true });
    app.on('GET', '/broken', (event) => page(event, '/broken', async () => {
      throw new Error('a bug');
    }));
    app.on('GET', '/refused', (event) => page(event, '/refused', async () => {
      throw new ApiError('api_disabled', { params: { retry_after: 7 }, headers: { 'Retry-After': '7' } });
    }));
    app.on('GET', '/web/api/broken', (event) => call(event, '/web/api/broken', async () => {
      throw new Error('a bug');
    }));
    server = createServer(toNodeHandler(app));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    process.off('warning', onWarning);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Warnings are emitted on the next tick: let them arrive. */
  const settled = () => new Promise((resolve) => setImmediate(resolve));

  it('answers an unplanned failure with a 500 page in the page language, logged and reported once', async () => {
    reports.length = 0;
    warnings.length = 0;
    const answer = await fetch(`${url}/broken`, { headers: { 'accept-language': 'de' } });
    assert.equal(answer.status, 500);
    assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(answer.headers.get('content-language'), 'de');
    assert.equal(answer.headers.get('cache-control'), 'no-store', 'the pages\' own headers');
    const body = await answer.text();
    assert.match(body, /^<!doctype html>/);
    assert.ok(body.includes('Ein interner Fehler ist aufgetreten.'), body);
    assert.ok(body.includes('href="/convd/"'), 'links under the pages\' path');
    await settled();
    assert.equal(warnings.filter((line) => line.includes('unexpected error on GET /broken') && line.includes('a bug')).length, 1, warnings.join('\n'));
    assert.deepEqual(reports.map(({ method, route, status, accountId }) => ({ method, route, status, accountId })), [{ method: 'GET', route: '/broken', status: 500, accountId: null }]);
  });

  it('answers a refusal with its own status, headers and words, unlogged', async () => {
    reports.length = 0;
    warnings.length = 0;
    const answer = await fetch(`${url}/refused?lang=en`, { headers: { 'accept-language': 'de' } });
    assert.equal(answer.status, 503);
    assert.equal(answer.headers.get('retry-after'), '7');
    assert.equal(answer.headers.get('content-language'), 'en', 'the language chosen on the page');
    assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok((await answer.text()).includes('<p class="error" role="alert">'));
    await settled();
    assert.deepEqual(warnings, []);
    assert.deepEqual(reports.map(({ route, status }) => ({ route, status })), [{ route: '/refused', status: 503 }]);
  });

  it('tells a failing session lookup as a page too, in the language the request asked for', async () => {
    sessionFails = true;
    try {
      const answer = await fetch(`${url}/refused?lang=de`);
      assert.equal(answer.status, 500);
      assert.equal(answer.headers.get('content-language'), 'de');
      assert.ok((await answer.text()).includes('Ein interner Fehler ist aufgetreten.'));
    } finally {
      sessionFails = false;
    }
  });

  it('keeps the API\'s error shape on the script\'s calls', async () => {
    const answer = await fetch(`${url}/web/api/broken`);
    assert.equal(answer.status, 500);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await answer.json(), { error: { code: 'internal_error', message: 'An internal error occurred.' } });
  });
});
