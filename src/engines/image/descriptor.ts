import { defineEngine } from '../descriptor.ts';
import { ANY_NAME_SOURCES, BYTES_SOURCES } from './formats.ts';
import { isHeavyImage } from './heavy-image.ts';

/**
 * sharp (libvips, on libuv's threads: the event loop stays free). An image heavy enough to hold
 * the loop anyway (heavy-image.ts) is converted in the engine host where there is one.
 */
export const image = defineEngine({
  name: 'image',
  limits: { timeLimitMs: 120_000, listedAt: 1 },
  loader: (settings) => ({
    // Imported up front (node:fs only): a dynamic import() goes through the module loader at every conversion.
    isolateWhen: isHeavyImage,
    // libvips finds the format from the bytes, in the daemon and in an engine host alike.
    readsAnyNameOf: ANY_NAME_SOURCES,
    picksReaderFromBytes: true,
    readsBytesOf: BYTES_SOURCES,
    load: async () => (await import('./sharp-engine.ts')).createImageEngine({ maxInputPixels: settings.maxInputPixels, processMemoryMb: settings.processMemoryMb }),
  }),
  // libheif's decoder for HEVC HEIC photos (heif-hevc.ts).
  binaries: ['heif-dec', 'heif-convert'].map((name) => ({ name, env: 'CONVD_HEIF_DECODER_PATH' })),
});
