/**
 * Hostile files the suites feed to the engines and the daemon: a decompression bomb, a zip that
 * claims to be a video, a PDF with a broken cross-reference table, hours of sparse silence.
 */
import assert from 'node:assert/strict';
import { truncate, writeFile } from 'node:fs/promises';
import { crc32, deflateSync } from 'node:zlib';

/**
 * A decompression bomb: a valid PNG whose header declares `side` x `side` grey pixels (10^10 for
 * the default side) over a few hundred bytes of compressed rows. Decoding it would need gigabytes.
 */
export function pngBomb(width = 100_000, height = width): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, 'latin1'), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  // Ten rows of zeros (filter byte + pixels); the rest is missing, which no decoder reaches.
  const rows = deflateSync(Buffer.alloc((width + 1) * 10), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', rows), chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A valid zip archive holding one stored (uncompressed) file: what a renamed .zip really is. */
export function storedZip(name: string, data: Buffer): Buffer {
  return storedZipOf([[name, data]]);
}

/** A valid zip archive of stored (uncompressed) files, in order (an OOXML or ODF package, say). */
export function storedZipOf(entries: [string, Buffer | string][]): Buffer {
  const parts: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of entries) {
    const data = Buffer.from(content);
    const fileName = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fileName.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(fileName.length, 28);
    central.writeUInt32LE(offset, 42);
    parts.push(local, fileName, data);
    centrals.push(central, fileName);
    offset += local.length + fileName.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

/** A PDF whose xref offsets all point 7 bytes too far: into the middle of objects. */
export function breakXref(pdf: Buffer): Buffer {
  const text = pdf.toString('latin1');
  const shifted = text.replace(/(\d{10}) 00000 n/g, (_, offset: string) => `${String(Number(offset) + 7).padStart(10, '0')} 00000 n`);
  assert.notEqual(shifted, text, 'the PDF has a classic xref table to break');
  return Buffer.from(shifted, 'latin1');
}

/** Silent mono 16-bit WAV of `hours` at 8 kHz: a valid header over a sparse file of zeros. */
export async function silentWav(path: string, hours: number): Promise<void> {
  const rate = 8000;
  const bytes = rate * 2 * hours * 3600;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + bytes, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(bytes, 40);
  await writeFile(path, header);
  await truncate(path, 44 + bytes);
}
