import { ConversionFailure } from '../../errors/api-error.ts';
import { engineEnvironment } from '../process/group.ts';
import { runProcess } from '../subprocess.ts';
import { pixelLimitFailure } from '../image/pixel-limit.ts';

const COUNT_TIME_LIMIT_MS = 30_000;

/** A file name as a PostScript string: backslashes and parentheses escaped. */
function postscriptString(text: string): string {
  return `(${text.replace(/[\\()]/g, (ch) => `\\${ch}`)})`;
}

/**
 * A PDF's pages as Ghostscript counts them (about 60 ms, out of the event loop, -dSAFER with
 * reading allowed of this one file), or undefined where it cannot tell (an encrypted or damaged
 * PDF: the OCR run itself says what is wrong then).
 */
export async function pdfPages(gs: string, path: string, signal?: AbortSignal): Promise<number | undefined> {
  let said = '';
  const result = await runProcess(gs, [
    '-q', '-dNODISPLAY', '-dSAFER', `--permit-file-read=${path}`, '-dBATCH', '-dNOPAUSE',
    '-c', `${postscriptString(path)} (r) file runpdfbegin pdfpagecount = quit`,
  ], {
    timeoutMs: COUNT_TIME_LIMIT_MS,
    env: engineEnvironment(),
    ...(signal ? { signal } : {}),
    onStdoutLine: (line) => {
      said ||= line.trim();
    },
  }).catch(() => undefined);
  if (!result || result.code !== 0 || !/^\d+$/.test(said)) return undefined;
  return Number(said);
}

/**
 * An image's pages (a TIFF's every one) and size from its header, through sharp; an image over
 * `maxPixels` a page (a decompression bomb) is refused here, before Tesseract decodes it.
 */
export async function imagePages(path: string, maxPixels: number): Promise<{ pages: number; width: number; height: number }> {
  const { default: sharp } = await import('../image/sharp-module.ts');
  let metadata: Awaited<ReturnType<ReturnType<typeof sharp>['metadata']>>;
  try {
    metadata = await sharp(path, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The image could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const width = metadata.width ?? 0;
  const height = metadata.height ?? 0;
  if (width < 1 || height < 1) throw new ConversionFailure('input_invalid', 'The image has no pixels.');
  if (width * height > maxPixels) throw pixelLimitFailure({ width, height }, maxPixels, false);
  return { pages: metadata.pages ?? 1, width, height };
}
