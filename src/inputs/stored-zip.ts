import { crc32 } from 'node:zlib';
import { fromBuffer as zipFromBuffer, type Entry, type Options, type ZipFile } from 'yauzl';
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

/** A zip held in memory, opened by yauzl (its central directory read and checked); entries read one by one unless `options` say otherwise. */
export function openZipBuffer(zip: Buffer, options: Options = { lazyEntries: true }): Promise<ZipFile> {
  return new Promise((resolve, reject) => zipFromBuffer(zip, options, (error, file) => (error ? reject(error) : resolve(file))));
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

/** A file of a zip built in memory: its name in the archive and its bytes. */
export interface StoredZipEntry {
  name: string;
  data: Uint8Array;
}

/** A zip's 32-bit fields and 16-bit counts bound what storedZip builds (no ZIP64). */
const MAX_STORED_ZIP_BYTES = 0xffff_ffff;
const MAX_STORED_ZIP_ENTRIES = 0xffff;
/** Names are UTF-8 (general purpose flag bit 11). */
const UTF8_NAMES = 0x0800;

/** A Date as MS-DOS time and date, the two 16-bit fields a zip keeps (local time, 2-second steps, from 1980). */
function dosDateTime(when: Date): { time: number; date: number } {
  const year = Math.min(Math.max(when.getFullYear(), 1980), 2107);
  return {
    time: (when.getHours() << 11) | (when.getMinutes() << 5) | Math.floor(when.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((when.getMonth() + 1) << 5) | when.getDate(),
  };
}

/**
 * The 26 bytes a local header and a central directory record share, from `at`: version 2.0
 * needed, UTF-8 names, stored, the time, the CRC-32, both sizes (known: no data descriptor), the
 * name's length, no extra field.
 */
function writeEntryFacts(zip: Buffer, at: number, facts: { crc: number; size: number; nameLength: number; time: number; date: number }): void {
  zip.writeUInt16LE(20, at);
  zip.writeUInt16LE(UTF8_NAMES, at + 2);
  zip.writeUInt16LE(0, at + 4);
  zip.writeUInt16LE(facts.time, at + 6);
  zip.writeUInt16LE(facts.date, at + 8);
  zip.writeUInt32LE(facts.crc, at + 10);
  zip.writeUInt32LE(facts.size, at + 14);
  zip.writeUInt32LE(facts.size, at + 18);
  zip.writeUInt16LE(facts.nameLength, at + 22);
  zip.writeUInt16LE(0, at + 24);
}

/**
 * A zip of the entries, each stored as it is, built whole in memory: the bundles and small
 * results the service writes itself. yazl streams an archive as many small pieces, a header
 * and the data of each entry one after another; for fifty one-page PDFs that cost more than
 * the merge's upload. Names are the service's own (never a path from a request).
 */
export function storedZip(entries: readonly StoredZipEntry[], modified = new Date()): Buffer {
  if (entries.length > MAX_STORED_ZIP_ENTRIES) throw new Error(`a zip of ${entries.length} entries needs ZIP64`);
  const { time, date } = dosDateTime(modified);
  const names = entries.map((entry) => {
    if (entry.name === '' || entry.name.startsWith('/') || entry.name.includes('\\') || entry.name.split('/').includes('..')) throw new Error(`not a zip entry name: ${entry.name}`);
    return Buffer.from(entry.name, 'utf8');
  });
  const localBytes = entries.reduce((sum, entry, index) => sum + 30 + names[index]!.length + entry.data.length, 0);
  const centralBytes = names.reduce((sum, name) => sum + 46 + name.length, 0);
  if (localBytes + centralBytes + 22 > MAX_STORED_ZIP_BYTES) throw new Error('a zip over 4 GiB needs ZIP64');
  const zip = Buffer.allocUnsafe(localBytes + centralBytes + 22);
  let at = 0;
  let central = localBytes;
  for (const [index, entry] of entries.entries()) {
    const name = names[index]!;
    const crc = crc32(entry.data);
    const size = entry.data.length;
    const facts = { crc, size, nameLength: name.length, time, date };
    // The local header: its signature, then the entry's facts.
    zip.writeUInt32LE(0x04034b50, at);
    writeEntryFacts(zip, at + 4, facts);
    name.copy(zip, at + 30);
    zip.set(entry.data, at + 30 + name.length);
    // Its central directory record: made by Unix, the same facts, no comment, a plain file (0644), where its local header is.
    zip.writeUInt32LE(0x02014b50, central);
    zip.writeUInt16LE((3 << 8) | 20, central + 4);
    writeEntryFacts(zip, central + 6, facts);
    zip.writeUInt16LE(0, central + 32);
    zip.writeUInt16LE(0, central + 34);
    zip.writeUInt16LE(0, central + 36);
    zip.writeUInt32LE((0o100644 << 16) >>> 0, central + 38);
    zip.writeUInt32LE(at, central + 42);
    name.copy(zip, central + 46);
    at += 30 + name.length + size;
    central += 46 + name.length;
  }
  // The end of the central directory: one disk, the entries, where the directory is.
  zip.writeUInt32LE(0x06054b50, central);
  zip.writeUInt16LE(0, central + 4);
  zip.writeUInt16LE(0, central + 6);
  zip.writeUInt16LE(entries.length, central + 8);
  zip.writeUInt16LE(entries.length, central + 10);
  zip.writeUInt32LE(centralBytes, central + 12);
  zip.writeUInt32LE(localBytes, central + 16);
  zip.writeUInt16LE(0, central + 20);
  return zip;
}
