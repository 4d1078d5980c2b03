import { open } from 'node:fs/promises';
import { ConversionFailure } from '../../errors/api-error.ts';
import { engineEnvironment, ENGINE_NICENESS } from '../process/group.ts';
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
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    ...(signal ? { signal } : {}),
    // The count is the last line: a damaged file's repair warnings may come before it.
    onStdoutLine: (line) => {
      if (/^\d+$/.test(line.trim())) said = line.trim();
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
  const { pages, width, height } = (await bmpHeader(path)) ?? (await sharpHeader(path));
  // Each page of a TIFF has a size of its own: a small first page must not let a huge second one by.
  for (let page = 1; page < Math.min(pages, MAX_PAGES_CHECKED); page++) {
    const other = await sharpHeader(path, page);
    if (other.width * other.height > maxPixels) throw pixelLimitFailure(other, maxPixels, false);
  }
  if (width < 1 || height < 1) throw new ConversionFailure('input_invalid', 'The image has no pixels.');
  if (width * height > maxPixels) throw pixelLimitFailure({ width, height }, maxPixels, false);
  return { pages, width, height };
}

/** Pages of a TIFF whose sizes are read before any work; past it the cap on pages refuses the file. */
const MAX_PAGES_CHECKED = 10_000;

async function sharpHeader(path: string, page = 0): Promise<{ pages: number; width: number; height: number }> {
  const { default: sharp } = await import('../image/sharp-module.ts');
  try {
    const metadata = await sharp(path, { limitInputPixels: false, page }).metadata();
    return { pages: metadata.pages ?? 1, width: metadata.width ?? 0, height: metadata.height ?? 0 };
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The image could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * A BMP's size from its header (libvips as npm ships it reads no BMP; Tesseract does): `BM`, then
 * the DIB header, whose size says its kind: 12 bytes (OS/2: 16-bit width and height at 18 and
 * 20), or 40 and more (32-bit at 18 and 22, the height negative for a top-down picture).
 * Undefined when the file is no BMP.
 */
async function bmpHeader(path: string): Promise<{ pages: number; width: number; height: number } | undefined> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(26);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    if (bytesRead < 26 || head.toString('latin1', 0, 2) !== 'BM') return undefined;
    const dib = head.readUInt32LE(14);
    if (dib === 12) return { pages: 1, width: head.readUInt16LE(18), height: head.readUInt16LE(20) };
    if (dib >= 40) return { pages: 1, width: Math.abs(head.readInt32LE(18)), height: Math.abs(head.readInt32LE(22)) };
    throw new ConversionFailure('input_invalid', `The BMP file's header is of an unknown kind (${dib} bytes).`);
  } finally {
    await file.close();
  }
}
