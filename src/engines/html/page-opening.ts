import { ConversionFailure } from '../../errors/api-error.ts';
import type { EngineJob } from '../types.ts';
import type { WarmBrowser, WarmPage } from './browser.ts';
import { describe } from './render.ts';

/** A launch (Playwright gives it 60 s) and a page's opening together; past this the browser is stuck. */
const PAGE_OPEN_LIMIT_MS = 90_000;

/**
 * The conversion's page. Its time limit has not started yet (the wait for a browser is not the
 * conversion's), so this bounds the wait itself: Playwright's newPage can stay pending for good
 * when its browser is killed meanwhile. Past the limit the browser is killed and the conversion
 * fails; on a cancel it ends at once. A page that still comes after either is given back unused.
 * A browser killed or crashed while the page opens fails this conversion, not the engine: the
 * next one launches another.
 */
export async function openPageFor(warm: WarmBrowser, job: EngineJob, limitMs = PAGE_OPEN_LIMIT_MS): Promise<WarmPage> {
  const opening = warm.page(job.tenant);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const cut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      void warm.kill();
      reject(new ConversionFailure('conversion_failed', `Chromium did not open a page within ${Math.round(limitMs / 1000)} s.`));
    }, limitMs);
    onAbort = () => reject(job.signal.reason);
    job.signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([opening, cut]);
  } catch (error) {
    void opening.then((late) => warm.release(late, { reusable: false, touched: new Set() }), () => undefined);
    if (job.signal.aborted) throw job.signal.reason;
    throw error instanceof ConversionFailure ? error : new ConversionFailure('conversion_failed', `Chromium could not open a page: ${describe(error)}`);
  } finally {
    clearTimeout(timer);
    if (onAbort) job.signal.removeEventListener('abort', onAbort);
  }
}
