import { availableParallelism } from 'node:os';
import { lazyEngine, type EngineLoader, type KnownEngine, type LazyEngine } from './lazy.ts';

export interface EngineSettings {
  maxInputPixels: number;
}

/**
 * Every engine the service offers, in order of preference when two declare the same pair
 * (jpg/png targets exist in both the image engine and the media engine's still frames, but for
 * different sources, so no pair is actually shared today). Each engine's module is imported
 * when it is first probed or used (lazy.ts), not when this module loads.
 */
export function engineLoaders(settings: EngineSettings): EngineLoader[] {
  // One ffmpeg run uses every core: more at once only share them (media-engine.ts).
  const mediaRuns = availableParallelism();
  return [
    { name: 'image', load: async () => (await import('./image/sharp-engine.ts')).createImageEngine({ maxInputPixels: settings.maxInputPixels }) },
    { name: 'media', maxConcurrentRuns: mediaRuns, load: async () => (await import('./media/media-engine.ts')).createMediaEngine({ maxConcurrentRuns: mediaRuns }) },
    { name: 'pdf', load: async () => (await import('./pdf/pdf-engine.ts')).createPdfEngine({ maxInputPixels: settings.maxInputPixels }) },
    { name: 'data', load: async () => (await import('./data/data-engine.ts')).createDataEngine() },
  ];
}

/**
 * The engines, each probed (and so loaded) at start-up by FormatRegistry.create. With `known`
 * (an earlier probe's findings, by engine name), an engine whose findings are there skips the
 * probe and loads on its first conversion.
 */
export function defaultEngines(settings: EngineSettings, known: ReadonlyMap<string, KnownEngine> = new Map()): LazyEngine[] {
  return engineLoaders(settings).map((loader) => lazyEngine(loader, known.get(loader.name)));
}
