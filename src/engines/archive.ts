import { createWriteStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { checkOutputSize } from './output-cap.ts';

/** One file of a zip: where it is on disk and its name in the archive (no directories). */
export interface ArchiveEntry {
  path: string;
  name: string;
  /** The file's whole content where the caller holds it already: not read again. */
  data?: Buffer;
}

/** Files read whole into the zip, at most this much of them in all: a stream each costs more than a small file. */
const READ_WHOLE_BYTES = 4 * 1024 * 1024;
const READ_WHOLE_ENTRY = 256 * 1024;

/**
 * Writes several results as one zip (EngineOutput.archive): each file stored as it is (PDFs and
 * images are compressed already; deflating them again costs time for a few bytes), small ones
 * read whole (a merge's fifty one-page PDFs), the others streamed from disk. Stops at the job's
 * output cap. Returns the archive's size.
 */
export async function writeZip(entries: readonly ArchiveEntry[], outputPath: string, signal: AbortSignal, maxBytes?: number): Promise<number> {
  const sizes = await Promise.all(entries.map(async (entry) => entry.data?.length ?? (await stat(entry.path)).size));
  const total = sizes.reduce((sum, size) => sum + size, 0);
  // Each entry's headers are about 100 bytes beside its name: a sum over the cap fails before writing.
  checkOutputSize(total, maxBytes);
  const zip = new ZipFile();
  const mtime = new Date();
  let readWhole = 0;
  for (const [index, entry] of entries.entries()) {
    const size = sizes[index]!;
    if (entry.data) zip.addBuffer(entry.data, entry.name, { compress: false, mtime });
    else if (size <= READ_WHOLE_ENTRY && readWhole + size <= READ_WHOLE_BYTES) {
      readWhole += size;
      zip.addBuffer(await readFile(entry.path), entry.name, { compress: false, mtime });
    } else zip.addFile(entry.path, entry.name, { compress: false, mtime });
  }
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(outputPath), { signal });
  const size = (await stat(outputPath)).size;
  checkOutputSize(size, maxBytes);
  return size;
}

/** `page-007.png` for page 7 of a document of up to 999 pages: names that sort in page order. */
export function numberedName(stem: string, number: number, last: number, extension: string): string {
  return `${stem}-${String(number).padStart(String(last).length, '0')}.${extension}`;
}
