import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { checkOutputSize } from './output-cap.ts';

/** One file of a zip: where it is on disk and its name in the archive (no directories). */
export interface ArchiveEntry {
  path: string;
  name: string;
}

/**
 * Writes several results as one zip (EngineOutput.archive): each file streamed from disk, stored
 * as it is (PDFs and images are compressed already; deflating them again costs time for a few
 * bytes). Stops at the job's output cap. Returns the archive's size.
 */
export async function writeZip(entries: readonly ArchiveEntry[], outputPath: string, signal: AbortSignal, maxBytes?: number): Promise<number> {
  let total = 0;
  for (const entry of entries) total += (await stat(entry.path)).size;
  // Each entry's headers are about 100 bytes beside its name: a sum over the cap fails before writing.
  checkOutputSize(total, maxBytes);
  const zip = new ZipFile();
  const mtime = new Date();
  for (const entry of entries) zip.addFile(entry.path, entry.name, { compress: false, mtime });
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
