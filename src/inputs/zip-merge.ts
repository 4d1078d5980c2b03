import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Entry, ZipFile } from 'yauzl';
import { entryStream, nextEntry, openZipFile } from './zip-entries.ts';

/** A file unpacked from a zip sent to be merged, in the spool. */
export interface UnpackedFile {
  path: string;
  size: number;
  /** Its name in the zip, without folders. */
  name: string;
}

export type ZipMergeOutcome =
  | { kind: 'files'; files: UnpackedFile[] }
  /** It holds an index.html: a web page for the HTML engine, not files to merge. */
  | { kind: 'page' }
  | { kind: 'refused'; reason: string };

export interface ZipMergeLimits {
  maxFiles: number;
  maxBytes: number;
}

/** Entries of any kind (folders, hidden files) a zip to merge may hold: its central directory is read no further. */
const MAX_LISTED = 2_000;

/** What a zip holds beside the files: folders, macOS's resource forks, hidden files. */
const skipped = (name: string): boolean => name.endsWith('/') || name.startsWith('__MACOSX/') || posix.basename(name).startsWith('.');

/**
 * A zip sent to be merged into one PDF: its files (in any folder), in the order of their names,
 * unpacked into the spool. yauzl checks every entry's size against its header while inflating
 * and refuses names that climb out; at most `maxFiles` files and `maxBytes` unpacked (a zip bomb
 * stops there). A zip with an index.html is a web page and is left to the HTML engine.
 */
export async function unpackZipForMerge(path: string, spoolPath: () => string, limits: ZipMergeLimits): Promise<ZipMergeOutcome> {
  let zip: ZipFile;
  try {
    zip = await openZipFile(path, { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true });
  } catch (error) {
    return { kind: 'refused', reason: `the zip cannot be read: ${error instanceof Error ? error.message : String(error)}` };
  }
  const entries: Entry[] = [];
  try {
    if (zip.entryCount > MAX_LISTED) return { kind: 'refused', reason: `the zip holds ${zip.entryCount} entries; at most ${MAX_LISTED} are read` };
    for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      if (posix.basename(entry.fileName).toLowerCase() === 'index.html') return { kind: 'page' };
      if (skipped(entry.fileName)) continue;
      entries.push(entry);
      // Listing stops at the first file too many: a zip of 200,000 entries is not read through.
      if (entries.length > limits.maxFiles) break;
    }
  } catch (error) {
    return { kind: 'refused', reason: `the zip cannot be read: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    zip.close();
  }
  if (entries.length === 0) return { kind: 'refused', reason: 'the zip holds no files' };
  if (entries.length > limits.maxFiles) return { kind: 'refused', reason: `the zip holds more than ${limits.maxFiles} files; at most ${limits.maxFiles} are merged` };
  const names = new Set<string>();
  for (const entry of entries) {
    if (names.has(entry.fileName)) return { kind: 'refused', reason: `the zip holds ${entry.fileName} twice` };
    names.add(entry.fileName);
  }
  const declared = entries.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  if (declared > limits.maxBytes) return { kind: 'refused', reason: `the zip unpacks to more than ${Math.floor(limits.maxBytes / 1024 / 1024)} MiB` };
  entries.sort((a, b) => a.fileName.localeCompare(b.fileName, 'en', { numeric: true }));
  // Opened again for the reading: the entries were listed first, to answer a page or a refusal without writing anything.
  const reading = await openZipFile(path, { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true });
  const written = new Map<string, UnpackedFile>();
  try {
    const wanted = new Map(entries.map((entry) => [entry.fileName, entry]));
    for (let entry = await nextEntry(reading); entry; entry = await nextEntry(reading)) {
      if (!wanted.has(entry.fileName)) continue;
      const target = spoolPath();
      const stream = await entryStream(reading, entry);
      const file = { path: target, size: entry.uncompressedSize, name: posix.basename(entry.fileName) };
      written.set(entry.fileName, file);
      await pipeline(stream, createWriteStream(target, { mode: 0o600 }));
    }
    return { kind: 'files', files: entries.map((entry) => written.get(entry.fileName)!) };
  } catch (error) {
    for (const file of written.values()) await rm(file.path, { force: true });
    return { kind: 'refused', reason: `the zip cannot be read: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    reading.close();
  }
}
