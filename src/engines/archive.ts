import { createWriteStream } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { storedZip } from '../inputs/stored-zip.ts';
import { checkOutputSize } from './output-cap.ts';

/** One file of a zip: where it is on disk and its name in the archive (no directories). */
export interface ArchiveEntry {
  path: string;
  name: string;
  /** The file's whole content where the caller holds it already: not read again. */
  data?: Buffer;
}

/** A zip whose files come to at most this much is built in memory and written at once. */
const IN_MEMORY_BYTES = 4 * 1024 * 1024;

/**
 * Writes several results as one zip (EngineOutput.archive): each file stored as it is (PDFs and
 * images are compressed already; deflating them again costs time for a few bytes). A small zip
 * (a merge's fifty one-page PDFs, a split's parts) is built in memory and written at once; a
 * larger one is streamed by yazl, its files from disk. Stops at the job's output cap. Returns the
 * archive's size.
 */
export async function writeZip(entries: readonly ArchiveEntry[], outputPath: string, signal: AbortSignal, maxBytes?: number): Promise<number> {
  const sizes = await Promise.all(entries.map(async (entry) => entry.data?.length ?? (await stat(entry.path)).size));
  const total = sizes.reduce((sum, size) => sum + size, 0);
  // Each entry's headers are about 100 bytes beside its name: a sum over the cap fails before writing.
  checkOutputSize(total, maxBytes);
  if (total <= IN_MEMORY_BYTES) {
    const files = await Promise.all(entries.map(async (entry) => ({ name: entry.name, data: entry.data ?? (await readFile(entry.path, { signal })) })));
    const zip = storedZip(files);
    checkOutputSize(zip.length, maxBytes);
    await writeFile(outputPath, zip, { signal });
    return zip.length;
  }
  const zip = new ZipFile();
  const mtime = new Date();
  for (const entry of entries) {
    if (entry.data) zip.addBuffer(entry.data, entry.name, { compress: false, mtime });
    else zip.addFile(entry.path, entry.name, { compress: false, mtime });
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
