import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair, FormatInfo } from '../pairs.ts';
import { firstLine } from '../process/first-line.ts';
import { findProgram } from '../process/path-search.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import { DEFAULT_MAX_INPUT_PIXELS, type Engine, type EngineJob, type EngineOutput, type EngineStatus } from '../types.ts';
import { OCR_FORMATS, OCR_IMAGE_SOURCES, ocrPairs } from './formats.ts';
import { ocrPdf } from './ocrmypdf.ts';
import { imageHeader, pdfPages } from './page-count.ts';
import type { OcrEngineOptions, OcrTools } from './tools.ts';
import { readImage } from './tesseract.ts';

export type { OcrEngineOptions, OcrTools } from './tools.ts';

export const OCR_INSTALL_HINT = 'install OCRmyPDF and Tesseract with a language (Debian and Ubuntu: `apt-get install ocrmypdf tesseract-ocr-eng tesseract-ocr-deu`) and restart convd, or set CONVD_OCRMYPDF_PATH and CONVD_TESSERACT_PATH';

/** Tesseract's data that reads no language: orientation and script detection, equations. */
const NOT_LANGUAGES = new Set(['osd', 'equ']);

async function installedLanguages(tesseract: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const lines: string[] = [];
  const result = await runProcess(tesseract, ['--list-langs'], {
    timeoutMs: 15_000,
    env,
    onStdoutLine: (line) => lines.push(line.trim()),
  });
  if (result.code !== 0) throw new Error(`tesseract --list-langs exited with ${result.code}: ${lastLines(result.stderrTail)}`);
  // The first line names the folder ("List of available languages in ..."); then one per line.
  return lines.filter((line) => /^[A-Za-z0-9_]+$/.test(line) && !NOT_LANGUAGES.has(line)).sort();
}

/**
 * OCR with OCRmyPDF and Tesseract, programs of the system: a PDF's scanned pages get an invisible
 * text layer (pdf -> pdf, and image -> pdf after the image engine made the page), a scanned PDF's
 * or an image's text is read (-> txt). Each run is a process group of its own under the job's time
 * and memory limits, at most `jobs` pages at once with one Tesseract thread each; pages are
 * counted and their pixels checked before any work, against the plan's page cap and the
 * decompression-bomb limit.
 */
export function createOcrEngine(given: Partial<OcrEngineOptions> = {}): Engine & { pagesOf(path: string, source: string): Promise<number | undefined> } {
  let tools: OcrTools | undefined;
  const settings: OcrEngineOptions = { ...given, jobs: given.jobs ?? 1, maxInputPixels: given.maxInputPixels ?? DEFAULT_MAX_INPUT_PIXELS };
  const env = settings.env ?? process.env;
  return {
    name: 'ocr',
    async probe(): Promise<EngineStatus> {
      tools = undefined;
      const ocrmypdf = await findProgram('ocrmypdf', 'CONVD_OCRMYPDF_PATH', env);
      const tesseract = await findProgram('tesseract', 'CONVD_TESSERACT_PATH', env);
      const gs = await findProgram('gs', 'CONVD_GHOSTSCRIPT_PATH', env);
      const missing = [!ocrmypdf && 'OCRmyPDF', !tesseract && 'Tesseract', !gs && 'Ghostscript'].filter(Boolean);
      if (!ocrmypdf || !tesseract || !gs) return { name: 'ocr', available: false, detail: `${missing.join(' and ')} not found: ${OCR_INSTALL_HINT}` };
      try {
        const [ocrVersion, tesseractVersion, languages] = await Promise.all([
          firstLine(ocrmypdf, ['--version']),
          firstLine(tesseract, ['--version']),
          installedLanguages(tesseract, env),
        ]);
        if (languages.length === 0) return { name: 'ocr', available: false, binary: ocrmypdf, detail: `Tesseract has no language installed: ${OCR_INSTALL_HINT}` };
        tools = { ocrmypdf, tesseract, gs, languages };
        return {
          name: 'ocr', available: true, binary: `${ocrmypdf}, ${tesseract}`, version: `OCRmyPDF ${ocrVersion}, ${tesseractVersion.replace(/^tesseract\s*/i, 'Tesseract ')}`,
          detail: `languages ${languages.join(', ')}; ${settings.jobs} page${settings.jobs === 1 ? '' : 's'} at once`,
        };
      } catch (error) {
        return { name: 'ocr', available: false, binary: ocrmypdf, detail: `OCRmyPDF or Tesseract does not run: ${error instanceof Error ? error.message : String(error)}` };
      }
    },
    pairs: (): ConversionPair[] => (tools ? ocrPairs(tools.languages) : []),
    formats: (): FormatInfo[] => OCR_FORMATS,
    async pagesOf(path: string, source: string): Promise<number | undefined> {
      if (!tools) return undefined;
      if (source === 'pdf') return pdfPages(tools.gs, path, { memoryLimitMb: settings.processMemoryMb });
      if ((OCR_IMAGE_SOURCES as readonly string[]).includes(source)) return imageHeader(path).then((header) => header.pages, () => undefined);
      return undefined;
    },
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!tools) throw new ConversionFailure('internal_error', 'The ocr engine was not probed or OCRmyPDF is unavailable.');
      job.signal.throwIfAborted();
      job.onProgress(0);
      const output = job.source === 'pdf'
        ? await ocrPdf(tools, settings, job)
        : await readImage(tools, settings, job);
      job.onProgress(100);
      return output;
    },
  };
}
