import { defineEngine } from '../descriptor.ts';

/** PDFium in WebAssembly: PDF pages to images and text, in the engine host. */
export const pdfpages = defineEngine({
  name: 'pdfpages',
  limits: { timeLimitMs: 120_000, listedAt: 3 },
  // PDFium reads the file as a PDF or not at all, and a page draws nothing from beside it.
  loader: (settings) => ({ isolated: true, readsAnyNameOf: ['pdf'], load: async () => (await import('./pdfpages-engine.ts')).createPdfPagesEngine({ maxInputPixels: settings.maxInputPixels }) }),
});
