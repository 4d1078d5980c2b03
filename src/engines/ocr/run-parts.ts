import { writeFile } from 'node:fs/promises';
import { delimiter, dirname } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { engineEnvironment } from '../process/group.ts';
import { checkOutputSize } from '../output-cap.ts';
import { pagedText } from '../page-text.ts';
import type { EngineJob, EngineOutput } from '../types.ts';
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
 * a configured CONVD_TESSERACT_PATH must be the one that reads). `from`: the environment the
 * probe read (the engine's own where one was given), so that runs see what the probe saw.
 */
export function ocrEnvironment(work: string, tools: { tesseract: string; gs: string }, from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const path = [...new Set([dirname(tools.tesseract), dirname(tools.gs)]), from.PATH ?? ''].filter(Boolean).join(delimiter);
  return engineEnvironment({
    TMPDIR: work,
    OMP_THREAD_LIMIT: '1',
    PATH: path,
    ...(from.TESSDATA_PREFIX ? { TESSDATA_PREFIX: from.TESSDATA_PREFIX } : {}),
  }, from);
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

/** Text read by OCR (`raw`, pages separated by form feeds) written as the job's result, within its output cap. */
export async function writePagedText(raw: string, job: EngineJob): Promise<EngineOutput> {
  const text = pagedText(raw);
  const size = Buffer.byteLength(text);
  checkOutputSize(size, job.maxOutputBytes);
  await writeFile(job.outputPath, text);
  return { size };
}
