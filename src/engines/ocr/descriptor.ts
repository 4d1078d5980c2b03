import { defineEngine } from '../descriptor.ts';

export interface OcrSettings {
  /**
   * Pages OCRmyPDF reads at once, each with one Tesseract thread (OMP_THREAD_LIMIT=1): OCR takes at
   * most this many cores, whatever the length of the document, and leaves the rest to the daemon
   * and the other engines.
   */
  jobs: number;
}

/** OCRmyPDF and Tesseract from the system: text from scans, as a PDF's text layer or as text. */
export const ocr = defineEngine<OcrSettings>({
  name: 'ocr',
  defaults: () => ({ jobs: 1 }),
  settings: [
    { key: 'ocr_jobs', field: 'jobs', kind: { type: 'integer', min: 1, max: 64 }, arg: 'n', help: 'pages one OCR conversion reads at once, one core each (default 1)' },
  ],
  // A scanned page takes OCRmyPDF 2-8 s of one core (a noisy 300-dpi page 8 s: drawing it, its
  // image work, Tesseract, the PDF): 7,200 s holds the largest plan's 500 pages a page at a time.
  limits: { timeLimitMs: 7_200_000 },
  loader: (settings, own) => ({
    countsPages: true,
    load: async () => (await import('./ocr-engine.ts')).createOcrEngine({
      jobs: own?.jobs ?? 1, maxInputPixels: settings.maxInputPixels, processMemoryMb: settings.processMemoryMb,
    }),
  }),
  // Debian's Tesseract 5 keeps its languages here; TESSDATA_PREFIX names another place.
  dataDirs: (env) => [env.TESSDATA_PREFIX ?? '/usr/share/tesseract-ocr/5/tessdata', '/usr/share/tesseract-ocr/4.00/tessdata'],
  binaries: [
    { name: 'ocrmypdf', env: 'CONVD_OCRMYPDF_PATH' },
    { name: 'tesseract', env: 'CONVD_TESSERACT_PATH' },
  ],
});
