import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { checkOutputSize, watchOutputCap } from '../output-cap.ts';
import { ENGINE_NICENESS } from '../process/group.ts';
import { runProcess } from '../subprocess.ts';
import type { EngineJob, EngineOutput } from '../types.ts';
import type { OcrMode } from './formats.ts';
import type { OcrEngineOptions, OcrTools } from './tools.ts';
import { pdfPages } from './page-count.ts';
import { checkPageCap, languagesOf, memoryWords, ocrEnvironment, writePagedText } from './run-parts.ts';

const MODE_FLAGS: Record<OcrMode, string> = { skip: '--skip-text', redo: '--redo-ocr', force: '--force-ocr' };

/** OCRmyPDF's exit codes (ocrmypdf.exceptions.ExitCode) that say the input is at fault. */
const INPUT_FAULTS: Record<number, string> = {
  2: 'The PDF could not be read',
  6: 'The PDF already has a text layer',
  8: 'The PDF is encrypted: OCR reads only PDFs without a password',
};

/** OCRmyPDF's exceptions that end a run, in words. */
const EXCEPTIONS: Record<string, string> = {
  UnsupportedImageFormatError: 'it is neither a PDF nor an image OCRmyPDF reads',
  InputFileError: 'it is not a PDF or is damaged',
  EncryptedPdfError: 'it is encrypted',
  DpiError: 'its page images have no usable resolution',
  PriorOcrFoundError: 'its pages already hold text',
  DigitalSignatureError: 'it is digitally signed (OCR would break the signature)',
  TaggedPDFError: 'it is a tagged PDF made by a program, not a scan',
};

/**
 * What went wrong, from OCRmyPDF's own lines: an exception it names, in words, or its last line
 * that is not a command it ran, a command's output or a Python traceback.
 */
function reason(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  for (const [name, words] of Object.entries(EXCEPTIONS)) if (lines.some((line) => line.includes(name))) return words;
  const own = lines.filter((line) => !/^\d*\s*Running:|^stdout\/stderr|^Found |^os\.symlink|^\d+\s|^Traceback|^File "|^raise |^\^|^[\w.]+(Error|Exception)\b|^During handling|^The above exception/.test(line));
  return own.slice(-2).join(' ');
}

/**
 * A PDF's scanned pages read by OCRmyPDF: into an invisible text layer over them (-> pdf, the page
 * images kept as they are: `--output-type pdf`, no optimisation), or into text (-> txt: every page
 * drawn and read, `--force-ocr`, the sidecar kept and no PDF written). Pages are counted first
 * (Ghostscript) against the plan's cap; progress is each page as OCRmyPDF grafts its text.
 */
export async function ocrPdf(tools: OcrTools, settings: OcrEngineOptions, job: EngineJob): Promise<EngineOutput> {
  const pages = await pdfPages(tools.gs, job.inputPath, { signal: job.signal, memoryLimitMb: settings.processMemoryMb });
  if (pages !== undefined) checkPageCap(pages, job);
  const toText = job.target === 'txt';
  const mode: OcrMode = toText ? 'force' : typeof job.options.ocr_mode === 'string' ? (job.options.ocr_mode as OcrMode) : 'skip';
  if (mode === 'redo' && job.options.deskew === true) {
    throw new ConversionFailure('input_invalid', 'ocr_mode=redo keeps the page images as they are, so it cannot be combined with deskew, which replaces them.');
  }
  const work = await mkdtemp(join(dirname(job.outputPath), 'ocr-'));
  const sidecar = join(work, 'text.txt');
  const args = [
    '-v', '1',
    '-l', languagesOf(job, tools.languages),
    '--jobs', String(settings.jobs),
    '--max-image-mpixels', String(settings.maxInputPixels / 1_000_000),
    MODE_FLAGS[mode],
    ...(job.options.deskew === true ? ['--deskew'] : []),
    ...(job.options.orient_pages === true ? ['--rotate-pages'] : []),
    ...(toText ? ['--output-type', 'none', '--sidecar', sidecar] : ['--output-type', 'pdf', '--optimize', '0']),
    // `--` ends the options: neither path can be read as one.
    '--', job.inputPath, toText ? '-' : job.outputPath,
  ];
  const capped = toText ? undefined : watchOutputCap(job.outputPath, job.maxOutputBytes, job.signal);
  let done = 0;
  try {
    const result = await runProcess(tools.ocrmypdf, args, {
      cwd: work,
      env: ocrEnvironment(work, tools, settings.env),
      signal: capped ? AbortSignal.any([job.signal, capped.signal]) : job.signal,
      timeoutMs: job.timeLimitMs,
      dieWithParent: true,
      niceness: ENGINE_NICENESS,
      memoryLimitMb: settings.processMemoryMb,
      // "   3 Grafting": page 3's text is in; pages end in any order when several are read at once.
      onStderrLine: (line) => {
        if (!/^\s*\d+ Grafting/.test(line)) return;
        done += 1;
        if (pages) job.onProgress(Math.min(99, Math.floor((done / pages) * 100)));
      },
    });
    const stderr = result.stderrTail.split(job.inputPath).join('the input').split(job.outputPath).join('the output').split(work).join('.');
    const said = reason(stderr);
    if (result.code !== 0) {
      const fault = result.code === null ? undefined : INPUT_FAULTS[result.code];
      if (fault) throw new ConversionFailure('input_invalid', `${fault}${said ? `: ${said}` : '.'}`);
      if (/DecompressionBomb|decompression bomb|max-image-mpixels/i.test(stderr)) {
        throw new ConversionFailure('input_invalid', `A page image of the PDF is larger than the limit of ${settings.maxInputPixels.toLocaleString('en-US')} pixels.`, { limit: settings.maxInputPixels });
      }
      if (/MemoryError|Cannot allocate|out of memory/i.test(stderr)) throw new ConversionFailure('memory_limit', `OCR needed more memory than ${memoryWords(settings.processMemoryMb)}.`);
      throw new ConversionFailure('conversion_failed', `OCRmyPDF failed (${result.code === null ? `killed by ${result.signal}` : `exit ${result.code}`})${said ? `: ${said}` : '.'}`);
    }
    if (toText) return await writePagedText(await readFile(sidecar, 'utf8'), job);
    const size = (await stat(job.outputPath)).size;
    checkOutputSize(size, job.maxOutputBytes);
    return { size };
  } finally {
    capped?.stop();
    await rm(work, { recursive: true, force: true });
  }
}
