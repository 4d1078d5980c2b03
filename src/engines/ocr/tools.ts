/** What the ocr engine is made with, and what its probe found: shared by its runs. */

export interface OcrEngineOptions {
  /** Pages read at once (ocr_jobs). */
  jobs: number;
  /** The most pixels a page image may have (max_input_pixels): past it the file is refused before any work. */
  maxInputPixels: number;
  /** Address space of each process, MiB (engine_memory_mb); none when unset. */
  processMemoryMb?: number;
  env?: NodeJS.ProcessEnv;
}

/** What the probe found: the programs, and the languages Tesseract has data for. */
export interface OcrTools {
  ocrmypdf: string;
  tesseract: string;
  /** Ghostscript, which OCRmyPDF draws pages with: here it counts a PDF's pages before any work. */
  gs: string;
  languages: string[];
}
