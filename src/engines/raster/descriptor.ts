import { defineEngine } from '../descriptor.ts';

/** ffmpeg for the still formats libvips lacks (BMP, ICO, Netpbm), to and from PNG; the media engine names the binary. */
export const raster = defineEngine({
  name: 'raster',
  limits: { timeLimitMs: 120_000, listedAt: 8 },
  loader: (settings) => ({
    load: async () => (await import('./raster-engine.ts')).createRasterEngine({ maxInputPixels: settings.maxInputPixels, processMemoryMb: settings.processMemoryMb }),
  }),
});
