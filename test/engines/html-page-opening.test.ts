/**
 * The wait for a conversion's page is bounded (page-opening.ts): a browser that never gives one
 * (Playwright's newPage pending for good) is killed at the limit and the conversion fails; a
 * cancel ends the wait at once; a page that comes too late is given back; a raw Playwright error
 * becomes conversion_failed. Driven with a stand-in for the warm browser: the hang it guards
 * against cannot be made on purpose with a real one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import type { PageReturn, WarmBrowser, WarmPage } from '../../src/engines/html/browser.ts';
import { openPageFor } from '../../src/engines/html/page-opening.ts';
import type { EngineJob } from '../../src/engines/types.ts';

interface StandIn {
  browser: WarmBrowser;
  kills: number;
  released: { page: WarmPage; returned: PageReturn }[];
}

function standIn(page: () => Promise<WarmPage>): StandIn {
  const seen: StandIn = { browser: undefined as unknown as WarmBrowser, kills: 0, released: [] };
  seen.browser = {
    page,
    kill: async () => {
      seen.kills++;
    },
    release: async (given: WarmPage, returned: PageReturn) => {
      seen.released.push({ page: given, returned });
    },
  } as unknown as WarmBrowser;
  return seen;
}

function jobWith(signal: AbortSignal): EngineJob {
  return { tenant: 'acc_test', signal } as unknown as EngineJob;
}

const aPage = { id: 7 } as unknown as WarmPage;

describe('the wait for a page', () => {
  it('a page that never comes: the browser is killed at the limit and the conversion fails', async () => {
    const seen = standIn(() => new Promise<WarmPage>(() => undefined));
    const began = Date.now();
    await assert.rejects(openPageFor(seen.browser, jobWith(new AbortController().signal), 200), (error: unknown) =>
      error instanceof ConversionFailure && error.code === 'conversion_failed' && /did not open a page within 0 s/.test(error.message));
    assert.ok(Date.now() - began < 2000);
    assert.equal(seen.kills, 1);
  });

  it('a cancel ends the wait at once with its reason, and kills nothing', async () => {
    const seen = standIn(() => new Promise<WarmPage>(() => undefined));
    const controller = new AbortController();
    const reason = new Error('cancelled by its owner');
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(openPageFor(seen.browser, jobWith(controller.signal), 60_000), (error: unknown) => error === reason);
    assert.equal(seen.kills, 0);
  });

  it('a page that comes after the limit is given back unused', async () => {
    const seen = standIn(() => new Promise<WarmPage>((resolve) => setTimeout(() => resolve(aPage), 300)));
    await assert.rejects(openPageFor(seen.browser, jobWith(new AbortController().signal), 100));
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.deepEqual(seen.released.map(({ page, returned }) => [page.id, returned.reusable]), [[7, false]]);
  });

  it('a page in time is the conversion\'s; a raw Playwright error is conversion_failed', async () => {
    const fine = standIn(async () => aPage);
    assert.equal(await openPageFor(fine.browser, jobWith(new AbortController().signal), 1000), aPage);
    assert.deepEqual(fine.released, []);
    const gone = standIn(async () => {
      throw new Error('browserContext.newPage: Target page, context or browser has been closed\nBrowser logs: ...');
    });
    await assert.rejects(openPageFor(gone.browser, jobWith(new AbortController().signal), 1000), (error: unknown) =>
      error instanceof ConversionFailure && error.code === 'conversion_failed' && error.message === 'Chromium could not open a page: browserContext.newPage: Target page, context or browser has been closed');
    assert.equal(gone.kills, 0);
  });
});
