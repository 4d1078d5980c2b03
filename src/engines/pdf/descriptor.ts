import { defineEngine } from '../descriptor.ts';

/** pdf-lib for images and text -> PDF: JavaScript's work, in the engine host. */
export const pdf = defineEngine({
  name: 'pdf',
  limits: { timeLimitMs: 300_000, listedAt: 2 },
  loader: (settings) => ({ isolated: true, load: async () => (await import('./pdf-engine.ts')).createPdfEngine({ maxInputPixels: settings.maxInputPixels }) }),
});
