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
 * reading allowed of this one file, niced, under the engine's memory limit), or undefined where it cannot tell (an encrypted or damaged
 * PDF: the OCR run itself says what is wrong then).
 */
export async function pdfPages(gs: string, path: string, limits: { signal?: AbortSignal; memoryLimitMb?: number | undefined } = {}): Promise<number | undefined> {
  let said = '';
  const result = await runProcess(gs, [
    '-q', '-dNODISPLAY', '-dSAFER', `--permit-file-read=${path}`, '-dBATCH', '-dNOPAUSE',
    '-c', `${postscriptString(path)} (r) file runpdfbegin pdfpagecount = quit`,
  ], {
    timeoutMs: COUNT_TIME_LIMIT_MS,
    env: engineEnvironment(),
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    ...(limits.signal ? { signal: limits.signal } : {}),
    memoryLimitMb: limits.memoryLimitMb,
    // The count is the last line: a damaged file's repair warnings may come before it.
    onStdoutLine: (line) => {
      if (/^\d+$/.test(line.trim())) said = line.trim();
    },
  }).catch(() => undefined);
  if (!result || result.code !== 0 || !/^\d+$/.test(said)) return undefined;
  return Number(said);
}

/** What an image's header says: its pages (a TIFF's every one) and its first page's size. */
export interface ImageHeader {
  pages: number;
  width: number;
  height: number;
}

/** An image's header, through sharp (a BMP's read here: libvips as npm ships it reads none). */
export async function imageHeader(path: string): Promise<ImageHeader> {
  return (await bmpHeader(path)) ?? (await sharpHeader(path));
}

/**
 * Refuses an image with a page over `maxPixels` (a decompression bomb) before Tesseract decodes
 * it. Each page of a TIFF has a size of its own, read from its header: a small first page must
 * not let a huge second one by. Run after the page cap, which bounds the pages read here.
 */
export async function checkImagePixels(path: string, header: ImageHeader, maxPixels: number): Promise<void> {
  if (header.width < 1 || header.height < 1) throw new ConversionFailure('input_invalid', 'The image has no pixels.');
  if (header.width * header.height > maxPixels) throw pixelLimitFailure(header, maxPixels, false);
  for (let page = 1; page < header.pages; page++) {
    const other = await sharpHeader(path, page);
    if (other.width * other.height > maxPixels) throw pixelLimitFailure(other, maxPixels, false);
  }
}

async function sharpHeader(path: string, page = 0): Promise<ImageHeader> {
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
async function bmpHeader(path: string): Promise<ImageHeader | undefined> {
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
