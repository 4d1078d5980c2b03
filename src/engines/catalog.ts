import type { EngineDescriptor } from './descriptor.ts';
import type { EngineHost } from './host/engine-host.ts';
import { withInputFile } from './input-file.ts';
import { lazyEngine, type EngineLoader, type KnownEngine, type LazyEngine } from './lazy.ts';
import type { EngineSettings } from './types.ts';
import { data } from './data/descriptor.ts';
import { html } from './html/descriptor.ts';
import { image } from './image/descriptor.ts';
import { markup } from './markup/descriptor.ts';
import { media } from './media/descriptor.ts';
import { ocr } from './ocr/descriptor.ts';
import { office } from './office/descriptor.ts';
import { pdf } from './pdf/descriptor.ts';
import { pdfops } from './pdfops/descriptor.ts';
import { pdfpages } from './pdfpages/descriptor.ts';
import { postscript } from './postscript/descriptor.ts';
import { raster } from './raster/descriptor.ts';

/**
 * Every engine the service offers (each folder's descriptor.ts), in order of preference when two
 * declare the same pair: svg and svgz -> pdf are the html engine's vectors where Chromium runs,
 * else the pdf engine's pixels; jpg/png targets exist in both the image engine and the media
 * engine's still frames, but for different sources; markup comes after data, which keeps
 * md -> html. Each engine's module is imported when it is first probed or used (lazy.ts), not
 * when this module loads. `isolated` engines do their work in JavaScript (or WebAssembly: PDFium
 * for pdfpages, qpdf for pdfops) and run it in the engine host (host/); sharp (libvips on libuv's
 * threads), ffmpeg, LibreOffice and pandoc (processes of their own) keep the event loop free by
 * themselves.
 */
export const ENGINES: readonly EngineDescriptor[] = [image, raster, media, html, pdf, pdfops, pdfpages, data, office, postscript, markup, ocr];

/** How to make each engine of the catalog with `settings`, without importing its module. */
export function engineLoaders(settings: EngineSettings): EngineLoader[] {
  return ENGINES.map((engine) => ({ name: engine.name, ...engine.loader(settings, settings.engines?.[engine.name]) }));
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
        convert: async (job) => ((await isolateWhen(job)) ? withInputFile(job, (onDisk) => host.convert(loader.name, settings, onDisk)) : engine.convert(job)),
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
      convert: (job) => withInputFile(job, (onDisk) => host.convert(loader.name, settings, onDisk)),
      close: () => host.close(),
    };
  });
}
