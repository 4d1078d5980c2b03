import { defineEngine } from '../descriptor.ts';

/**
 * PDF operations (pdf -> pdf with pages, rotation, marks, metadata, PDF/A, encryption) and
 * pdf -> json: qpdf (WebAssembly) and pdf-lib are JavaScript's work, in the engine host; PDF/A is
 * a Ghostscript process of its own.
 */
export const pdfops = defineEngine({
  name: 'pdfops',
  limits: { timeLimitMs: 300_000 },
  loader: (settings) => ({ isolated: true, load: async () => (await import('./pdfops-engine.ts')).createPdfOperationsEngine({ processMemoryMb: settings.processMemoryMb, maxInputPixels: settings.maxInputPixels }) }),
  binaries: [{ name: 'gs', env: 'CONVD_GHOSTSCRIPT_PATH' }],
  variables: ['CONVD_SRGB_PROFILE'],
});
