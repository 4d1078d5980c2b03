import type { BrowserContext, Page } from 'playwright-core';

/** The part of a warm page (browser.ts) that a clean-up works on. */
export interface PageInContext {
  context: BrowserContext;
  page: Page;
}

/**
 * Makes a page that served a conversion of an account ready for the account's next one, so that
 * the next finds nothing of the last: popups and other pages closed, the session storage of every
 * origin still in a frame cleared (the tab's own; Chromium clears it only for an origin that has
 * a frame, so before the page leaves), the conversion's request routes removed, the document left
 * for about:blank (which ends its workers, channels and timers), every storage type of every
 * origin it touched cleared (cookies, local storage, IndexedDB, Cache Storage, service workers,
 * file systems, ...), the HTTP cache and the tab's history emptied, then every cookie of the
 * context. Each conversion also gets a registrable site of its own (render.ts), so what a clean-up
 * could miss is keyed to a site no later conversion has. Any failure rejects: the caller throws
 * the page away.
 */
export async function resetForNextConversion(warm: PageInContext, touched: ReadonlySet<string>): Promise<void> {
  const { context, page } = warm;
  await Promise.all(context.pages().filter((other) => other !== page).map((other) => other.close()));
  const cdp = await context.newCDPSession(page);
  try {
    const framed = new Set(page.frames().map((frame) => originOf(frame.url())).filter((origin) => origin !== null));
    for (const origin of framed) {
      await cdp.send('DOMStorage.clear', { storageId: { securityOrigin: origin, isLocalStorage: false } });
    }
    await context.unrouteAll({ behavior: 'ignoreErrors' });
    await page.goto('about:blank', { waitUntil: 'load', timeout: 0 });
    for (const origin of new Set([...touched, ...framed])) {
      await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' });
    }
    await cdp.send('Network.clearBrowserCache');
    await cdp.send('Page.resetNavigationHistory');
  } finally {
    await cdp.detach().catch(() => undefined);
  }
  await context.clearCookies();
}

/** The http(s) origin of a frame's URL; null for about:blank, data: and the like. */
function originOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : null;
  } catch {
    return null;
  }
}
