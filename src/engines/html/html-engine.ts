import { availableParallelism } from 'node:os';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../../formats/types.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import { WarmBrowser } from './browser.ts';
import { findChromium, type ChromiumInstall } from './find-chromium.ts';
import { HTML_FORMATS, HTML_SOURCES, HTML_TARGETS, imageOptions, PDF_OPTIONS, PDF_VARIANTS, REMOTE_OPTION } from './formats.ts';
import { render } from './render.ts';
import { loadSite } from './site.ts';

export interface HtmlEngineOptions {
  /** Pages rendered at once (each a context of its own in the one browser); default the cores. */
  pages?: number;
  /** The browser is replaced after this many conversions. */
  recycleAfter?: number;
  /** V8 heap of a page, MiB. */
  pageHeapMb?: number;
  maxInputPixels?: number;
  /** A conversion may ask to load public http(s) resources (`allow_remote_resources`). */
  remoteResources?: boolean;
  /** The test switch of URL inputs (`--allow-private-urls`): private addresses allowed too. */
  allowPrivateUrls?: boolean;
  /** Private addresses and ranges resources may come from all the same (`url_allow_networks`). */
  allowedNetworks?: readonly string[];
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_RECYCLE_AFTER = 200;
const DEFAULT_PAGE_HEAP_MB = 512;
/** A context that does not close in this time means a browser that no longer answers: it is killed. */
const CLOSE_GRACE_MS = 5_000;

/**
 * HTML (a file, or a zip of a page and its files) to PDF and images with Chromium (DESIGN.md,
 * "HTML engine"): one warm browser, a fresh context per conversion, only the conversion's own files
 * loadable, JavaScript on and bounded by the job's time limit.
 */
export function createHtmlEngine(settings: HtmlEngineOptions = {}): Engine {
  let install: ChromiumInstall | undefined;
  let browser: WarmBrowser | undefined;
  const pages = settings.pages ?? availableParallelism();
  return {
    name: 'html',
    maxConcurrentRuns: pages,
    startsClock: true,
    async probe(): Promise<EngineStatus> {
      install = await findChromium(settings.env ?? process.env);
      if (!install.ready) return { name: 'html', available: false, ...(install.path ? { binary: install.path } : {}), detail: install.problem };
      return {
        name: 'html', available: true, binary: install.path, version: install.version,
        detail: `${pages} pages at once in one browser, replaced after ${settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER} conversions; only the conversion's own files load`,
      };
    },
    pairs: (): ConversionPair[] => (install?.ready ? htmlPairs(settings.remoteResources === true) : []),
    formats: () => HTML_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!install?.ready) throw new ConversionFailure('internal_error', 'The HTML engine was not probed or Chromium is unavailable.');
      job.onProgress(0);
      const site = await loadSite(job.source, job.inputPath);
      browser ??= new WarmBrowser({
        executable: install.path,
        recycleAfter: settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER,
        pageHeapMb: settings.pageHeapMb ?? DEFAULT_PAGE_HEAP_MB,
      });
      const warm = browser;
      const fresh = await warm.freshPage();
      job.startClock?.();
      const remote = settings.remoteResources === true && job.options.allow_remote_resources === true
        ? { allowPrivate: settings.allowPrivateUrls === true, allowedNetworks: settings.allowedNetworks ?? [] }
        : null;
      const outcome = render(fresh, site, job, { maxInputPixels: settings.maxInputPixels ?? 100_000_000, remote });
      // A browser that does not let go of an aborted page within the grace is killed (the next
      // conversion gets a new one); the abort itself already failed this conversion.
      let killTimer: NodeJS.Timeout | undefined;
      const stuck = () => {
        killTimer = setTimeout(() => void warm.kill(), CLOSE_GRACE_MS);
      };
      job.signal.addEventListener('abort', stuck, { once: true });
      try {
        const { size } = await outcome;
        return { size };
      } finally {
        job.signal.removeEventListener('abort', stuck);
        clearTimeout(killTimer);
      }
    },
    async close(): Promise<void> {
      await browser?.close();
      browser = undefined;
    },
  };
}

function htmlPairs(remote: boolean): ConversionPair[] {
  return HTML_SOURCES.flatMap((source) => HTML_TARGETS.map((target): ConversionPair => ({
    source, target, engine: 'html', kind: 'document',
    options: [...(target === 'pdf' ? PDF_OPTIONS : imageOptions(target)), ...(remote ? [REMOTE_OPTION] : [])],
    variants: target === 'pdf' ? PDF_VARIANTS : [],
  })));
}
