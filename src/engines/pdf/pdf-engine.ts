import { access, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import type { Engine, EngineJob, EngineStatus } from '../types.ts';
import {
  IMAGE_OPTIONS, IMAGE_SOURCES, IMAGE_VARIANTS, PDF_FORMATS, PDF_VARIANTS, TEXT_FONT_FILE, TEXT_FONT_NAME, TEXT_OPTIONS, TEXT_VARIANTS,
} from './formats.ts';
import { qpdfModulePath, runQpdf } from './qpdf.ts';

export interface PdfEngineOptions {
  /** Decompression-bomb guard for image inputs (pixels); sharp's own default when omitted. */
  maxInputPixels?: number;
}

const SHARP_DEFAULT_PIXEL_LIMIT = 268_402_689;

/** qpdf options of each pdf -> pdf variant. */
const QPDF_OPTIONS: Record<string, string[]> = {
  compress: ['--object-streams=generate', '--compress-streams=y', '--recompress-flate', '--compression-level=9'],
  linearize: ['--linearize', '--compress-streams=y'],
};

/** qpdf warnings that mean it had to repair the file: the input is broken, so the job fails. */
const REPAIRED = /damaged|reconstruct|recover/i;

/** Images, text and PDF -> PDF: pdf-lib builds documents, qpdf (WebAssembly) rewrites them. */
export function createPdfEngine(settings: PdfEngineOptions = {}): Engine {
  const maxInputPixels = settings.maxInputPixels ?? SHARP_DEFAULT_PIXEL_LIMIT;
  let qpdf: string | undefined;

  return {
    name: 'pdf',
    /**
     * Finds pdf-lib, the font and qpdf without loading them: pdf-lib and fontkit (which unpacks
     * its tables with Brotli) took about 240 ms of every daemon start. They load with the first
     * conversion to PDF; a font that is there but does not parse fails that conversion as
     * internal_error, its cause in the daemon's log.
     */
    async probe(): Promise<EngineStatus> {
      const require = createRequire(import.meta.url);
      const pdfLib = require('pdf-lib/package.json') as { version: string };
      require.resolve('@pdf-lib/fontkit');
      await access(require.resolve(TEXT_FONT_FILE));
      try {
        qpdf = qpdfModulePath();
      } catch {
        qpdf = undefined;
      }
      const qpdfVersion = qpdf ? (require('@neslinesli93/qpdf-wasm/package.json') as { version: string }).version : undefined;
      return {
        name: 'pdf',
        available: true,
        binary: 'pdf-lib',
        version: pdfLib.version,
        detail: `font ${TEXT_FONT_NAME}; ${qpdf ? `qpdf-wasm ${qpdfVersion} for pdf -> pdf` : 'qpdf-wasm missing: pdf -> pdf not offered'}`,
      };
    },
    pairs(): ConversionPair[] {
      const pairs: ConversionPair[] = IMAGE_SOURCES.map((source) => ({
        source, target: 'pdf', engine: 'pdf', kind: 'pdf', options: IMAGE_OPTIONS, variants: IMAGE_VARIANTS,
      }));
      pairs.push({ source: 'txt', target: 'pdf', engine: 'pdf', kind: 'pdf', options: TEXT_OPTIONS, variants: TEXT_VARIANTS });
      if (qpdf) pairs.push({ source: 'pdf', target: 'pdf', engine: 'pdf', kind: 'pdf', options: [], variants: PDF_VARIANTS });
      return pairs;
    },
    formats: () => PDF_FORMATS,
    async convert(job: EngineJob): Promise<void> {
      job.signal.throwIfAborted();
      if (job.target !== 'pdf') throw new ConversionFailure('conversion_failed', `The pdf engine has no target ${job.target}.`);
      if (job.source === 'txt') return (await import('./text-to-pdf.ts')).textToPdf(job);
      if (job.source === 'pdf') return rewritePdf(job);
      return (await import('./image-to-pdf.ts')).imageToPdf(job, { maxInputPixels });
    },
  };
}

/** pdf -> pdf through qpdf: metadata (Info dictionary and XMP) is kept as it is. */
async function rewritePdf(job: EngineJob): Promise<void> {
  job.onProgress(0);
  const options = QPDF_OPTIONS[job.variant ?? 'compress'] ?? QPDF_OPTIONS.compress!;
  const result = await runQpdf(options, job.inputPath, job.outputPath, job.signal);
  const detail = result.messages.filter((line) => line.trim().length > 0).slice(-3).join(' | ');
  if (result.code === 2) {
    throw new ConversionFailure('input_invalid', `The input is not a readable PDF: ${detail || 'qpdf could not open it'}`);
  }
  if (result.code === 3 && REPAIRED.test(detail)) {
    throw new ConversionFailure('input_invalid', `The PDF is damaged: ${detail}`);
  }
  if (result.code !== 0 && result.code !== 3) {
    throw new ConversionFailure('conversion_failed', `qpdf failed (${result.code}): ${detail || 'no message'}`);
  }
  const size = await stat(job.outputPath).then((s) => s.size, () => 0);
  if (size === 0) throw new ConversionFailure('conversion_failed', 'qpdf wrote no output.');
  job.onProgress(100);
}
