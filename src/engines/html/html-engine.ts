import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import type { HelperLifecycle } from '../process/supervisor.ts';
import { DEFAULT_MAX_INPUT_PIXELS, type Engine, type EngineJob, type EngineOutput, type EngineStatus } from '../types.ts';
import { WarmBrowser, type IdlePage, type ReuseMode } from './browser.ts';
import { findChromium, type ChromiumInstall } from './find-chromium.ts';
import { HTML_FORMATS, HTML_SOURCES, HTML_TARGETS, imageOptions, PDF_OPTIONS, PDF_VARIANTS, REMOTE_OPTION } from './formats.ts';
import type { LeftOutRemedies } from './left-out.ts';
import { openPageFor } from './page-opening.ts';
import { render } from './render.ts';
import { DEFAULT_SANDBOX_UID, describeSandbox, planSandbox, type SandboxPlan } from './sandbox.ts';
import { loadSite, SITE_ORIGIN } from './site.ts';
import { textPrintOptions, textSite } from './text-page.ts';
import { isSvgSource, loadSvgSite, SVG_FORMATS, svgPairs, svgPlan } from './svg.ts';

export interface HtmlEngineOptions {
  /** Pages rendered at once (each a context of its own in the one browser); default the cores. */
  pages?: number;
  /** The browser is replaced after this many conversions. */
  recycleAfter?: number;
  /** V8 heap of a page, MiB. */
  pageHeapMb?: number;
  /** A renderer past this resident memory, MiB, is killed: its conversion fails memory_limit. */
  memoryLimitMb?: number;
  /** `none` (a fresh context per conversion, the default) or `account` (pages reused within one account). */
  reuse?: ReuseMode;
  /** Account reuse: a page serves at most this many conversions. */
  pageUses?: number;
  /** Account reuse: at most this many idle pages, over all accounts. */
  idlePages?: number;
  /** Chromium's own sandbox: `auto` (where it can run) or `off`. */
  sandbox?: 'auto' | 'off';
  /** The uid the browser runs as, sandboxed, when the daemon is root. */
  sandboxUid?: number;
  maxInputPixels?: number;
  /** A conversion may ask to load public http(s) resources (`allow_remote_resources`). */
  remoteResources?: boolean;
  /** The test switch of URL inputs (`--allow-private-urls`): private addresses allowed too. */
  allowPrivateUrls?: boolean;
  /** Private addresses and ranges resources may come from all the same (`url_allow_networks`). */
  allowedNetworks?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Told when a browser starts or ends, as the office engine's and the engine host's pools tell of theirs. */
  onLifecycle?: (event: HelperLifecycle) => void;
}

const DEFAULT_RECYCLE_AFTER = 200;
const DEFAULT_PAGE_HEAP_MB = 512;
export const HTML_DEFAULTS = { memoryLimitMb: 1024, pageUses: 100, idlePages: 8 } as const;
/** A context that does not close in this time means a browser that no longer answers: it is killed. */
const CLOSE_GRACE_MS = 5_000;

/** The HTML engine, with what tests may look at: the idle pages of account reuse. */
export interface HtmlEngine extends Engine {
  idlePages(): IdlePage[];
  /** The sandbox the browser runs (or will run) with, once probed. */
  sandbox(): SandboxPlan | undefined;
}

/**
 * HTML (a file, or a zip of a page and its files) to PDF and images, and SVG to PDF as vectors
 * (svg.ts), with Chromium: one warm browser, a fresh context per
 * conversion (or, opted in, pages reused within one account), only the conversion's own files
 * loadable, JavaScript on and bounded by the job's time limit, the renderers' memory by a limit.
 */
export function createHtmlEngine(settings: HtmlEngineOptions = {}): HtmlEngine {
  let install: ChromiumInstall | undefined;
  let sandbox: SandboxPlan | undefined;
  let browser: WarmBrowser | undefined;
  const pages = settings.pages ?? availableParallelism();
  const reuse = settings.reuse ?? 'none';
  const memoryLimitMb = settings.memoryLimitMb ?? HTML_DEFAULTS.memoryLimitMb;
  return {
    name: 'html',
    maxConcurrentRuns: pages,
    startsClock: true,
    async probe(): Promise<EngineStatus> {
      install = await findChromium(settings.env ?? process.env);
      if (!install.ready) return { name: 'html', available: false, ...(install.path ? { binary: install.path } : {}), detail: install.problem };
      sandbox ??= await planSandbox({ mode: settings.sandbox ?? 'auto', uid: settings.sandboxUid ?? DEFAULT_SANDBOX_UID }, settings.env ?? process.env);
      const pageRule = reuse === 'account'
        ? `pages reused within one account (at most ${settings.pageUses ?? HTML_DEFAULTS.pageUses} conversions each, ${settings.idlePages ?? HTML_DEFAULTS.idlePages} kept idle)`
        : 'a fresh context per conversion';
      return {
        name: 'html', available: true, binary: install.path, version: install.version,
        detail: `${pages} pages at once in one browser, ${pageRule}, replaced after ${settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER} conversions; `
          + `only the conversion's own files load; renderers held to ${memoryLimitMb} MB; ${describeSandbox(sandbox)}`,
      };
    },
    pairs: (): ConversionPair[] => (install?.ready ? [...htmlPairs(settings.remoteResources === true), ...svgPairs(), TEXT_FALLBACK] : []),
    formats: () => [...HTML_FORMATS, ...SVG_FORMATS],
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!install?.ready) throw new ConversionFailure('internal_error', 'The HTML engine was not probed or Chromium is unavailable.');
      job.onProgress(0);
      const svg = isSvgSource(job.source);
      const text = job.source === 'txt';
      const site = svg ? await loadSvgSite(job.source, job.inputPath) : text ? await textSite(job) : await loadSite(job.source, job.inputPath);
      browser ??= new WarmBrowser({
        executable: install.path,
        recycleAfter: settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER,
        pageHeapMb: settings.pageHeapMb ?? DEFAULT_PAGE_HEAP_MB,
        rendererMemoryMb: memoryLimitMb,
        reuse,
        pageUses: settings.pageUses ?? HTML_DEFAULTS.pageUses,
        idlePages: settings.idlePages ?? HTML_DEFAULTS.idlePages,
        sandbox: sandbox ?? { on: false, why: 'not probed' },
        ...(settings.onLifecycle ? { onLifecycle: settings.onLifecycle } : {}),
      });
      const warm = browser;
      const remote = settings.remoteResources === true && job.options.allow_remote_resources === true
        ? { allowPrivate: settings.allowPrivateUrls === true, allowedNetworks: settings.allowedNetworks ?? [] }
        : null;
      const limits = { maxInputPixels: settings.maxInputPixels ?? DEFAULT_MAX_INPUT_PIXELS, remote, remedies: remediesFor(job, svg || text, settings.remoteResources === true), rendererMemoryMb: memoryLimitMb };
      const drawn = text ? { ...job, options: textPrintOptions(job) } : job;
      const plan = svg ? svgPlan(job) : undefined;
      /** One page opened and drawn; where `mayRetry`, a failure because its browser died (not the page) is a BrowserDied. */
      const renderOnce = async (mayRetry: boolean): Promise<EngineOutput> => {
        const page = await openPageFor(warm, job);
        job.startClock?.();
        const touched = new Set<string>();
        const target = {
          warm: page,
          // A reused page meets each conversion at a registrable site of its own (RFC 6761 .invalid).
          origin: reuse === 'account' ? `http://${randomBytes(12).toString('hex')}.invalid` : SITE_ORIGIN,
          touched,
          killedForMemory: (since: number) => warm.killedForMemory(page, since),
        };
        const outcome = render(target, site, drawn, limits, plan);
        // A browser that does not let go of an aborted page within the grace is killed (the next
        // conversion gets a new one); the abort itself already failed this conversion.
        let killTimer: NodeJS.Timeout | undefined;
        const stuck = () => {
          killTimer = setTimeout(() => void warm.kill(), CLOSE_GRACE_MS);
        };
        job.signal.addEventListener('abort', stuck, { once: true });
        let reusable = false;
        try {
          const drawnPage = await outcome;
          reusable = !job.signal.aborted;
          return drawnPage;
        } catch (error) {
          if (mayRetry && !job.signal.aborted && error instanceof ConversionFailure && error.code === 'conversion_failed' && await warm.browserDied(page)) {
            throw new BrowserDied();
          }
          throw error;
        } finally {
          job.signal.removeEventListener('abort', stuck);
          clearTimeout(killTimer);
          await warm.release(page, { reusable, touched });
        }
      };
      try {
        return await renderOnce(true);
      } catch (error) {
        if (!(error instanceof BrowserDied)) throw error;
      }
      // Its browser was killed or crashed under the page (the OOM killer, an operator, a crash):
      // drawn once more in the next browser, within the same time limit. Once only: a page that
      // takes its browser down with it fails as it does there.
      return renderOnce(false);
    },
    async close(): Promise<void> {
      await browser?.close();
      browser = undefined;
    },
    idlePages: () => browser?.idlePages() ?? [],
    sandbox: () => browser?.sandboxInUse() ?? sandbox,
  };
}

/**
 * What a conversion could have done to have what its page misses: a page may ask for remote
 * resources where the service allows it (Markdown's too, on its way to a PDF); a web page of the
 * user's own may come with its files as a zip. An SVG or text drawn here can do neither.
 */
function remediesFor(job: EngineJob, drawing: boolean, remoteOffered: boolean): LeftOutRemedies {
  return { remoteOption: remoteOffered && !drawing, zipOption: !drawing && job.origin === undefined };
}

/** A page's conversion failed because its browser died: it is drawn again in the next one. */
class BrowserDied extends Error {
  constructor() {
    super('the page\'s browser died');
    this.name = 'BrowserDied';
  }
}

/** Text the PDF engine's font cannot set; its options and variants are those of the pair it serves. */
const TEXT_FALLBACK: ConversionPair = { source: 'txt', target: 'pdf', engine: 'html', kind: 'pdf', options: [], variants: [], fallbackOnly: true };

function htmlPairs(remote: boolean): ConversionPair[] {
  return HTML_SOURCES.flatMap((source) => HTML_TARGETS.map((target): ConversionPair => ({
    source, target, engine: 'html', kind: 'document',
    options: [...(target === 'pdf' ? PDF_OPTIONS : imageOptions(target)), ...(remote ? [REMOTE_OPTION] : [])],
    variants: target === 'pdf' ? PDF_VARIANTS : [],
  })));
}
