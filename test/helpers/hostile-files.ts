/**
 * Hostile files the suites feed to the engines and the daemon: a decompression bomb, a zip that
 * claims to be a video, a PDF with a broken cross-reference table, hours of sparse silence, office
 * documents that are not what they claim, a PDF of ten thousand pages.
 */
import assert from 'node:assert/strict';
import { truncate, writeFile } from 'node:fs/promises';
import { crc32, deflateSync } from 'node:zlib';
import { PDFDocument, PDFName, PDFNumber, StandardFonts, type PDFRef } from 'pdf-lib';

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

/** A minimal docx around `body` (the word/document.xml), with external image links if any. */
export function docxOf(documentXml: string, links: string[] = []): Buffer {
  const files: [string, Buffer | string][] = [
    ['[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'],
    ['_rels/.rels', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'],
    ['word/document.xml', documentXml],
  ];
  if (links.length > 0) {
    const relationships = links.map((target, i) => `<Relationship Id="rIdL${i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${target}" TargetMode="External"/>`).join('');
    files.push(['word/_rels/document.xml.rels', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${relationships}</Relationships>`]);
  }
  return storedZipOf(files);
}

/** A docx whose text is a "billion laughs": nine levels of entities, each ten of the one below. */
export function billionLaughsDocx(): Buffer {
  const levels = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('');
  return docxOf(`<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol0 "lol">${levels}]><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>`);
}

/**
 * A PDF of `count` US-letter pages in about half a second for 10,000: pdf-lib's page-by-page API
 * takes seconds, so the page dictionaries are written directly and share one content stream
 * ("PAGE-MARKER"), except the first and the last two pages, which say `PAGE-<n>-MARKER`; `band`
 * paints a coloured band across the top of one page. A classic cross-reference table (no object
 * streams), as most PDFs in the wild have.
 */
export async function manyPagesPdf(count: number, band?: { page: number; rgb: [number, number, number] }): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const context = doc.context;
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const resources = context.register(context.obj({ Font: { F1: font.ref } }));
  const text = (marker: string) => `BT /F1 24 Tf 50 700 Td (${marker}) Tj ET`;
  const shared = context.register(context.stream(text('PAGE-MARKER')));
  const pagesRef = doc.catalog.get(PDFName.of('Pages')) as PDFRef;
  const kids: PDFRef[] = [];
  for (let number = 1; number <= count; number++) {
    const own = number === 1 || number >= count - 1;
    const paint = band?.page === number ? `${band.rgb.map((c) => (c / 255).toFixed(3)).join(' ')} rg 0 742 612 50 re f ` : '';
    const contents = own ? context.register(context.stream(paint + text(`PAGE-${number}-MARKER`))) : shared;
    kids.push(context.register(context.obj({ Type: 'Page', Parent: pagesRef, MediaBox: [0, 0, 612, 792], Resources: resources, Contents: contents })));
  }
  const pages = doc.catalog.Pages();
  pages.set(PDFName.of('Kids'), context.obj(kids));
  pages.set(PDFName.of('Count'), PDFNumber.of(kids.length));
  return doc.save({ useObjectStreams: false, addDefaultPage: false, updateFieldAppearances: false });
}
