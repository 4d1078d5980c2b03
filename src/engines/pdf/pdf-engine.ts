import { access } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import type { Engine, EngineJob, EngineStatus } from '../types.ts';
import {
  IMAGE_OPTIONS, IMAGE_SOURCES, IMAGE_VARIANTS, PDF_FORMATS, TEXT_FONT_FILE, TEXT_FONT_NAME, TEXT_OPTIONS, TEXT_VARIANTS,
} from './formats.ts';

export interface PdfEngineOptions {
  /** Decompression-bomb guard for image inputs (pixels); sharp's own default when omitted. */
  maxInputPixels?: number;
}

const SHARP_DEFAULT_PIXEL_LIMIT = 268_402_689;

/** Images and text -> PDF: pdf-lib builds the documents (pdf -> pdf is the pdfops engine's). */
export function createPdfEngine(settings: PdfEngineOptions = {}): Engine {
  const maxInputPixels = settings.maxInputPixels ?? SHARP_DEFAULT_PIXEL_LIMIT;

  return {
    name: 'pdf',
    /**
     * Finds pdf-lib and the font without loading them: pdf-lib and fontkit (which unpacks
     * its tables with Brotli) took about 240 ms of every daemon start. They load with the first
     * conversion to PDF; a font that is there but does not parse fails that conversion as
     * internal_error, its cause in the daemon's log.
     */
    async probe(): Promise<EngineStatus> {
      const require = createRequire(import.meta.url);
      const pdfLib = require('pdf-lib/package.json') as { version: string };
      require.resolve('@pdf-lib/fontkit');
      await access(require.resolve(TEXT_FONT_FILE));
      return {
        name: 'pdf',
        available: true,
        binary: 'pdf-lib',
        version: pdfLib.version,
        detail: `font ${TEXT_FONT_NAME}`,
      };
    },
    pairs(): ConversionPair[] {
      const pairs: ConversionPair[] = IMAGE_SOURCES.map((source) => ({
        source, target: 'pdf', engine: 'pdf', kind: 'pdf', options: IMAGE_OPTIONS, variants: IMAGE_VARIANTS,
      }));
      pairs.push({ source: 'txt', target: 'pdf', engine: 'pdf', kind: 'pdf', options: TEXT_OPTIONS, variants: TEXT_VARIANTS });
      return pairs;
    },
    formats: () => PDF_FORMATS,
    async convert(job: EngineJob): Promise<void> {
      job.signal.throwIfAborted();
      if (job.target !== 'pdf') throw new ConversionFailure('conversion_failed', `The pdf engine has no target ${job.target}.`);
      if (job.source === 'txt') return (await import('./text-to-pdf.ts')).textToPdf(job);
      return (await import('./image-to-pdf.ts')).imageToPdf(job, { maxInputPixels });
    },
  };
}
