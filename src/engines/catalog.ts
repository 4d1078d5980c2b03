import { availableParallelism } from 'node:os';
import type { InputCaps } from './data/input-caps.ts';
import type { EngineHost } from './host/engine-host.ts';
import { lazyEngine, type EngineLoader, type KnownEngine, type LazyEngine } from './lazy.ts';

/** The LibreOffice pool of the office engine. */
export interface OfficeSettings {
  instances: number;
  recycleAfter: number;
  memoryLimitMb: number;
  /** Start the instances with the daemon rather than with the first document. */
  warmAtStart: boolean;
}

/** The Chromium of the HTML engine. */
export interface HtmlSettings {
  pages: number;
  recycleAfter: number;
  /** A conversion may ask for public http(s) resources (html_remote_resources). */
  remoteResources: boolean;
  /** `none`: a fresh context per conversion; `account`: pages reused within one account (html_reuse). */
  reuse: 'none' | 'account';
  /** Account reuse: conversions a page serves before it is replaced (html_page_uses). */
  pageUses: number;
  /** Account reuse: idle pages kept over all accounts (html_idle_pages). */
  idlePages: number;
  /** A renderer past this resident memory, MiB, is killed (html_memory_mb). */
  memoryLimitMb: number;
  /** Chromium's own sandbox where it can run, or off (html_sandbox). */
  sandbox: 'auto' | 'off';
  /** The uid the browser runs as when the daemon is root (html_sandbox_uid). */
  sandboxUid: number;
  /** The URL inputs' test switch, which reaches the resources a page loads too. */
  allowPrivateUrls?: boolean;
  /** url_allow_networks: private networks the resources may come from all the same. */
  allowedNetworks?: readonly string[];
}

/**
 * How long an engine that can see its own progress may go without any before its conversion ends
 * as `timeout`, ms (postscript_stall_timeout, office_stall_timeout; 0: only the time limit).
 * Ghostscript's progress is its PDF growing, counted in its processor time; LibreOffice's is the
 * pages of its PDF export, counted by the clock.
 */
export interface StallWindows {
  postscript: number;
  office: number;
}

/**
 * The defaults. postscript: a document's page (what drivers and drawing programs write) is drawn
 * in well under a second, and what goes 20 s without a page done or a buffer of drawing written
 * is a program computing or looping rather than drawing. office: a page of LibreOffice's PDF
 * export takes well under a second; the slowest measured here, a page holding a 64-megapixel
 * picture, took 4 s on two busy cores, so a slide of several such pictures stays well inside.
 */
export const DEFAULT_STALL_MS: StallWindows = { postscript: 20_000, office: 30_000 };

/** What the engines are made with; plain data, so that the engine host gets the same. */
export interface EngineSettings {
  maxInputPixels: number;
  /**
   * Memory of one engine process that is not pooled (libheif's decoder, ffmpeg for still images,
   * Ghostscript), MiB: engine_memory_mb. None when unset.
   */
  processMemoryMb?: number;
  /** The data engine's per-format caps; its defaults when unset. */
  inputCaps?: InputCaps;
  /** The office engine's pool; one instance per core, on demand, when unset. */
  office?: OfficeSettings;
  /** The HTML engine's browser; pages at once per core, replaced after 200 conversions, when unset. */
  html?: HtmlSettings;
  /**
   * Runs an engine takes beyond its own number for the workers' quick lane (WorkerPool): the
   * LibreOffice pool has this many more instances, the engine host this many more processes.
   */
  quickRuns?: number;
  /** No early end when unset. */
  stallMs?: StallWindows;
}

/**
 * Every engine the service offers, in order of preference when two declare the same pair
 * (svg and svgz -> pdf: the html engine's vectors where Chromium runs, else the pdf engine's
 * pixels; jpg/png targets exist in both the image engine and the media engine's still frames,
 * but for different sources). Each engine's module is imported
 * when it is first probed or used (lazy.ts), not when this module loads. `isolated` engines do
 * their work in JavaScript (or WebAssembly: PDFium for pdfpages, qpdf for pdf) and run it in the
 * engine host (host/); sharp (libvips on libuv's threads), ffmpeg, LibreOffice and pandoc
 * (processes of their own) keep the event loop free by themselves.
 */
export function engineLoaders(settings: EngineSettings): EngineLoader[] {
  // One ffmpeg run uses every core: more at once only share them (media-engine.ts).
  const mediaRuns = availableParallelism();
  return [
    {
      name: 'image',
      isolateWhen: async (job) => (await import('./image/heavy-image.ts')).isHeavyImage(job),
      load: async () => (await import('./image/sharp-engine.ts')).createImageEngine({ maxInputPixels: settings.maxInputPixels, processMemoryMb: settings.processMemoryMb }),
    },
    // ffmpeg for the still formats libvips lacks (BMP, ICO, Netpbm), to and from PNG.
    { name: 'raster', load: async () => (await import('./raster/raster-engine.ts')).createRasterEngine({ maxInputPixels: settings.maxInputPixels, processMemoryMb: settings.processMemoryMb }) },
    { name: 'media', maxConcurrentRuns: mediaRuns, load: async () => (await import('./media/media-engine.ts')).createMediaEngine({ maxConcurrentRuns: mediaRuns }) },
    {
      // Chromium: one warm browser, a context per conversion, this many pages at once. Before
      // pdf: where Chromium runs, svg -> pdf is its vectors, not the pdf engine's pixels.
      name: 'html',
      maxConcurrentRuns: settings.html?.pages ?? availableParallelism(),
      startsClock: true,
      load: async () => (await import('./html/html-engine.ts')).createHtmlEngine({ ...settings.html, maxInputPixels: settings.maxInputPixels }),
    },
    { name: 'pdf', isolated: true, load: async () => (await import('./pdf/pdf-engine.ts')).createPdfEngine({ maxInputPixels: settings.maxInputPixels }) },
    { name: 'pdfpages', isolated: true, load: async () => (await import('./pdfpages/pdfpages-engine.ts')).createPdfPagesEngine({ maxInputPixels: settings.maxInputPixels }) },
    { name: 'data', isolated: true, load: async () => (await import('./data/data-engine.ts')).createDataEngine({ inputCaps: settings.inputCaps }) },
    {
      // One document per LibreOffice instance: the runner waits for a free one before the time limit.
      name: 'office',
      maxConcurrentRuns: settings.office?.instances ?? availableParallelism(),
      startsClock: true,
      load: async () => (await import('./office/office-engine.ts')).createOfficeEngine({ ...settings.office, quickInstances: settings.quickRuns ?? 0, stallMs: settings.stallMs?.office }),
    },
    // Ghostscript for EPS, PostScript and Illustrator files (to PDF, then on through the PDF engines).
    { name: 'postscript', load: async () => (await import('./postscript/ghostscript-engine.ts')).createGhostscriptEngine({ processMemoryMb: settings.processMemoryMb, stallMs: settings.stallMs?.postscript }) },
    // pandoc, a process of its own (sandboxed, heap-limited): after data, which keeps md -> html.
    { name: 'markup', maxConcurrentRuns: availableParallelism(), load: async () => (await import('./markup/markup-engine.ts')).createMarkupEngine() },
  ];
}

/**
 * The engines, each probed (and so loaded) at start-up by FormatRegistry.create. With `known`
 * (an earlier probe's findings, by engine name), an engine whose findings are there skips the
 * probe and loads on its first conversion. With `host`, the isolated engines convert there (their
 * declarations, probe and pairs, stay here: they read no user file); without, in this process.
 */
export function defaultEngines(settings: EngineSettings, known: ReadonlyMap<string, KnownEngine> = new Map(), host?: EngineHost): LazyEngine[] {
  return engineLoaders(settings).map((loader) => {
    const engine = lazyEngine(loader, known.get(loader.name));
    if (loader.isolateWhen && host) {
      const isolateWhen = loader.isolateWhen;
      return {
        ...engine,
        convert: async (job) => ((await isolateWhen(job)) ? host.convert(loader.name, settings, job) : engine.convert(job)),
        close: async () => {
          await engine.close?.();
          await host.close();
        },
      };
    }
    if (!loader.isolated || !host) return engine;
    return {
      ...engine,
      // Starting a host process (or waiting for a free one) is not the conversion's time.
      startsClock: true,
      async probe() {
        const status = await engine.probe();
        return { ...status, detail: [status.detail, `runs in engine host processes (${host.memoryLimitMb} MB each)`].filter(Boolean).join('; ') };
      },
      convert: (job) => host.convert(loader.name, settings, job),
      close: () => host.close(),
    };
  });
}
