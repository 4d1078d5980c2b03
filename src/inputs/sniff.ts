import { open } from 'node:fs/promises';
import { IMAGE_HEADER_BYTES } from './image-header.ts';
import { zipHoldsDocument } from './zip-document.ts';

/** What an upload's first bytes tell. */
export interface SniffedContent {
  /** A file extension (`png`, `mp4`, `svg`), or undefined. */
  format: string | undefined;
  /**
   * The head as UTF-8 text, for the callers' text checks (looksLikeTable). Decoded when asked:
   * 4 KiB of an image's bytes decoded as UTF-8 (every sequence invalid) took 10-14 us of every
   * upload's main thread, for a check made only when no format was found.
   */
  text(): string;
}

/**
 * Bytes read from the start of an upload. file-type is given this buffer, not the file: reading
 * the file itself it may walk a zip's entries or skip tags through the whole file, on the
 * daemon's event loop, for every upload. A format it cannot tell from these bytes goes by the
 * file's name instead. As much as an image's header is looked for in: the pixels the submission
 * reads from these bytes are those the heavy-image check would read from the file.
 */
export const HEAD_BYTES = IMAGE_HEADER_BYTES;
/** What the text checks look at. */
const TEXT_BYTES = 4096;
const SVG = /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^>]*>\s*)?<svg[\s>]/i;

/** A file to sniff: where it is, and its first bytes where they were kept as it was written. */
export interface SniffSource {
  path: string;
  /** The first bytes as the upload was spooled (SpooledFile.head), so that the file is not opened again for them. */
  head?: Buffer | undefined;
  /** Its size: with a head this long, the head is the whole file (which may not be on disk at all). */
  size?: number;
}

/**
 * Guesses a file's format from its first bytes (one read): magic numbers through file-type, plus
 * SVG, which is text and has none. `named`: the format the file's name says. Where the bytes say
 * a plain zip and the name a zip-based document (docx, ods, epub...), the zip's central directory
 * decides: a document whose first entries are large images is one (file-type looks only at the
 * first entries); a zip without that format's entries stays a zip.
 */
export async function sniffContent(file: SniffSource, named?: string): Promise<SniffedContent> {
  const bytes = file.head ?? await readHead(file.path);
  const { fileTypeFromBuffer } = await fileType();
  const detected = await fileTypeFromBuffer(bytes).catch(() => undefined);
  let decoded: string | undefined;
  const text = (): string => (decoded ??= bytes.subarray(0, TEXT_BYTES).toString('utf8'));
  // file-type calls any XML document `xml`, an SVG that opens with `<?xml ...?>` too: look closer.
  const whole = file.head !== undefined && file.head.length === file.size ? file.head : undefined;
  if (detected?.ext === 'zip' && named && await zipHoldsDocument(whole ?? file.path, named)) return { format: named, text };
  if (detected && detected.ext !== 'xml') return { format: detected.ext, text };
  return { format: SVG.test(text()) ? 'svg' : detected?.ext, text };
}

let fileTypeModule: Promise<typeof import('file-type')> | undefined;

/**
 * file-type, imported with the first upload: the daemon's start and the CLI's commands do without
 * it. Kept once imported: an `import()` of a module already loaded still resolves it again (15 us
 * of every upload's main thread in the built daemon).
 */
function fileType(): Promise<typeof import('file-type')> {
  return (fileTypeModule ??= import('file-type'));
}

/** The first HEAD_BYTES of a file (all of a smaller one). */
async function readHead(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * Whether a text file's head (named .json) is plainly a table, not JSON: its first character
 * opens no JSON value, and its first line holds a delimiter (`,`, `;`, tab). Text formats have no
 * magic number; this one guess is made because a CSV saved as .json is a common mistake and
 * JSON's first character is so telling.
 */
export function looksLikeTable(head: string): boolean {
  const text = head.replace(/^\ufeff/, '').trimStart();
  if (text === '' || /^(?:[[{"\-0-9]|true\b|false\b|null\b)/.test(text)) return false;
  return /[,;\t]/.test(text.split(/\r?\n/, 1)[0]!);
}
