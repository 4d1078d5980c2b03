import { defineEngine } from '../descriptor.ts';

/** PDFium in WebAssembly: PDF pages to images and text, in the engine host. */
export const pdfpages = defineEngine({
  name: 'pdfpages',
  limits: { timeLimitMs: 120_000, listedAt: 3 },
  loader: (settings) => ({ isolated: true, load: async () => (await import('./pdfpages-engine.ts')).createPdfPagesEngine({ maxInputPixels: settings.maxInputPixels }) }),
});
