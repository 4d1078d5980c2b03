import { delimiter, dirname } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { engineEnvironment } from '../process/group.ts';
import type { EngineJob } from '../types.ts';
import { defaultLanguage } from './formats.ts';

/** The languages asked for (validated against the installed ones at submission), or the default. */
export function languagesOf(job: EngineJob, installed: readonly string[]): string {
  const asked = job.options.language;
  return typeof asked === 'string' && asked.length > 0 ? asked : defaultLanguage(installed);
}

/**
 * What OCRmyPDF and Tesseract run with: temp files in the job's own folder, one Tesseract thread
 * (OpenMP would take every core for one page), Tesseract's data where the daemon was told it is,
 * and the Tesseract and Ghostscript the probe found first on PATH (OCRmyPDF looks them up there:
 * a configured CONVD_TESSERACT_PATH must be the one that reads).
 */
export function ocrEnvironment(work: string, tools: { tesseract: string; gs: string }): NodeJS.ProcessEnv {
  const path = [...new Set([dirname(tools.tesseract), dirname(tools.gs)]), process.env.PATH ?? ''].filter(Boolean).join(delimiter);
  return engineEnvironment({
    TMPDIR: work,
    OMP_THREAD_LIMIT: '1',
    PATH: path,
    ...(process.env.TESSDATA_PREFIX ? { TESSDATA_PREFIX: process.env.TESSDATA_PREFIX } : {}),
  });
}

/** The memory limit in words, for a failure past it. */
export function memoryWords(limitMb: number | undefined): string {
  return limitMb === undefined ? 'the memory it could get' : `its limit of ${limitMb} MB`;
}

/** Refuses a file over the plan's OCR pages (max_ocr_pages), with the cap in the words. */
export function checkPageCap(pages: number, job: EngineJob): void {
  if (job.maxOcrPages !== undefined && pages > job.maxOcrPages) {
    throw new ConversionFailure('input_invalid', `The file has ${pages} pages; OCR reads at most ${job.maxOcrPages} pages in one conversion on this plan.`, { pages, limit: job.maxOcrPages });
  }
}

/**
 * Text as the service writes it (pdf -> txt's form): pages separated by a form feed, LF line
 * ends, no other control characters, one newline at the end. Tesseract ends every page with a
 * form feed; OCRmyPDF's sidecar puts one between pages.
 */
export function pagedText(raw: string): string {
  const pages = raw.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000B\u000E-\u001F\u007F]/g, '').split('\f');
  if (pages.length > 1 && pages.at(-1)!.trim() === '') pages.pop();
  return `${pages.map((page) => page.replace(/\s+$/, '')).join('\f')}\n`;
}
