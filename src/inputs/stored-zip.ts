import { crc32 } from 'node:zlib';
import { fromBuffer as zipFromBuffer, type Entry, type ZipFile } from 'yauzl';
import { nextEntry } from './zip-entries.ts';

/**
 * A stored (uncompressed) entry's bytes in a zip held in memory, checked against its CRC-32; an
 * entry that is compressed or not where its header says is undefined (to be read through yauzl).
 * The service writes its bundles stored: their entries are slices, with no stream each.
 */
export function storedData(zip: Buffer, entry: Entry): Buffer | undefined {
  const at = entry.relativeOffsetOfLocalHeader;
  if (entry.compressionMethod !== 0 || entry.compressedSize !== entry.uncompressedSize || at + 30 > zip.length || zip.readUInt32LE(at) !== 0x04034b50) return undefined;
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const end = start + entry.compressedSize;
  if (end > zip.length) return undefined;
  const data = zip.subarray(start, end);
  if (crc32(data) !== entry.crc32) throw new Error(`entry ${entry.fileName} of a bundle is damaged (CRC-32)`);
  return data;
}

/** A zip held in memory, opened by yauzl (its central directory read and checked). */
export function openZipBuffer(zip: Buffer): Promise<ZipFile> {
  return new Promise((resolve, reject) => zipFromBuffer(zip, { lazyEntries: true }, (error, file) => (error ? reject(error) : resolve(file))));
}

/** The named entries of a zip in memory, each stored: name -> bytes. An entry missing, or not stored, is an error. */
export async function storedEntries(zip: Buffer, names: readonly string[]): Promise<Map<string, Buffer>> {
  const wanted = new Set(names);
  const found = new Map<string, Buffer>();
  const file = await openZipBuffer(zip);
  try {
    for (let entry = await nextEntry(file); entry; entry = await nextEntry(file)) {
      if (!wanted.has(entry.fileName)) continue;
      const data = storedData(zip, entry);
      if (!data) throw new Error(`entry ${entry.fileName} of a bundle is not stored`);
      found.set(entry.fileName, data);
    }
  } finally {
    file.close();
  }
  const missing = names.find((name) => !found.has(name));
  if (missing !== undefined) throw new Error(`entry ${missing} is missing from its bundle`);
  return found;
}
