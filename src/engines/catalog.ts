import { availableParallelism } from 'node:os';
import type { EngineHost } from './host/engine-host.ts';
import { lazyEngine, type EngineLoader, type KnownEngine, type LazyEngine } from './lazy.ts';
import type { EngineSettings, StallWindows } from './settings.ts';

/** The settings' types live in a file of their own, which the engine host takes without the catalog. */
export type { EngineSettings, HtmlSettings, OfficeSettings, StallWindows } from './settings.ts';

/**
 * The defaults. postscript: a document's page (what drivers and drawing programs write) is drawn
 * in well under a second, and what goes 20 s without a page done or a buffer of drawing written
 * is a program computing or looping rather than drawing. office: a page of LibreOffice's PDF
 * export takes well under a second; the slowest measured here, a page holding a 64-megapixel
 * picture, took 4 s on two busy cores, so a slide of several such pictures stays well inside.
 */
export const DEFAULT_STALL_MS: StallWindows = { postscript: 20_000, office: 30_000 };

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
