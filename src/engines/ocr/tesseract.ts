import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import type { EngineJob, EngineOutput } from '../types.ts';
import type { OcrEngineOptions, OcrTools } from './tools.ts';
import { checkImagePixels, imageHeader } from './page-count.ts';
import { checkPageCap, languagesOf, memoryWords, ocrEnvironment, writePagedText } from './run-parts.ts';

/**
 * An image's text (every page of a TIFF), read by Tesseract itself: no PDF is made on the way. The
 * image's size is read from its header first, and an image over the pixel limit or the plan's pages
 * is refused before Tesseract decodes anything.
 */
export async function readImage(tools: OcrTools, settings: OcrEngineOptions, job: EngineJob): Promise<EngineOutput> {
  const header = await imageHeader(job.inputPath);
  const { pages } = header;
  checkPageCap(pages, job);
  await checkImagePixels(job.inputPath, header, settings.maxInputPixels);
  const work = await mkdtemp(join(dirname(job.outputPath), 'ocr-'));
  try {
    const base = join(work, 'text');
    const result = await runProcess(tools.tesseract, [job.inputPath, base, '-l', languagesOf(job, tools.languages), 'txt'], {
      cwd: work,
      env: ocrEnvironment(work, tools, settings.env),
      signal: job.signal,
      timeoutMs: job.timeLimitMs,
      dieWithParent: true,
      niceness: ENGINE_NICENESS,
      memoryLimitMb: settings.processMemoryMb,
      // A TIFF's pages are told as Tesseract begins each: "Page 2 of 5" (or "Page 2").
      onStderrLine: (line) => {
        const page = /^Page (\d+)/.exec(line);
        if (page && pages > 1) job.onProgress(Math.min(99, Math.floor(((Number(page[1]) - 1) / pages) * 100)));
      },
    });
    const said = lastLines(result.stderrTail.split(job.inputPath).join('the image').split(work).join('.'), 2);
    if (result.code !== 0) {
      if (/pixRead|Unsupported|image file|read_image|Error during processing/i.test(said)) throw new ConversionFailure('input_invalid', `Tesseract could not read the image: ${said}`);
      if (/alloc|memory/i.test(said)) throw new ConversionFailure('memory_limit', `Tesseract needed more memory than ${memoryWords(settings.processMemoryMb)}.`);
      throw new ConversionFailure('conversion_failed', `Tesseract failed (${result.code === null ? `killed by ${result.signal}` : `exit ${result.code}`})${said ? `: ${said}` : '.'}`);
    }
    return await writePagedText(await readFile(`${base}.txt`, 'utf8'), job);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
