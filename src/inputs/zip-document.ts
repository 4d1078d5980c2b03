import type { ZipFile } from 'yauzl';
import { openZipBuffer } from './stored-zip.ts';
import { nextEntry, openZipFile } from './zip-entries.ts';

/**
 * The entries that make a zip a document of each zip-based format: every one of a group must be
 * in its central directory (a name ending in `/` is a folder some entry is in). OOXML packages
 * hold `[Content_Types].xml` and their application's folder, OpenDocument files `mimetype` and
 * `content.xml`, an EPUB `mimetype` and its container.
 */
const OOXML = (folder: string) => ['[Content_Types].xml', `${folder}/`];
const ODF = ['mimetype', 'content.xml'];
const MARKERS: Record<string, string[]> = {
  docx: OOXML('word'), dotx: OOXML('word'),
  xlsx: OOXML('xl'), xltx: OOXML('xl'),
  pptx: OOXML('ppt'), potx: OOXML('ppt'),
  odt: ODF, ott: ODF, ods: ODF, ots: ODF, odp: ODF, otp: ODF, odg: ODF, otg: ODF,
  epub: ['mimetype', 'META-INF/container.xml'],
};

/** A document's central directory is read this far, no further: real ones hold a few hundred. */
const MAX_ENTRIES = 20_000;

/**
 * Whether the zip (at a path, or all of it in memory) holds the entries of a `format` document, wherever they are in it.
 * file-type reads a zip's entries in order from the first bytes, and calls it a plain zip when a
 * pptx puts large images before its `[Content_Types].xml`: the central directory, at the end,
 * lists every entry's name. Entries are not unpacked. False for a zip that cannot be read.
 */
export async function zipHoldsDocument(zipFile: string | Buffer, format: string): Promise<boolean> {
  const wanted = MARKERS[format];
  if (!wanted) return false;
  let zip: ZipFile;
  try {
    const options = { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: false, strictFileNames: false };
    zip = typeof zipFile === 'string' ? await openZipFile(zipFile, options) : await openZipBuffer(zipFile, options);
  } catch {
    return false;
  }
  const missing = new Set(wanted);
  const seen = (name: string) => {
    for (const marker of missing) {
      if (marker.endsWith('/') ? name.startsWith(marker) : name === marker) missing.delete(marker);
    }
  };
  try {
    for (let count = 0; missing.size > 0 && count < MAX_ENTRIES; count++) {
      const entry = await nextEntry(zip);
      if (!entry) break;
      seen(entry.fileName);
    }
  } catch {
    return false;
  } finally {
    zip.close();
  }
  return missing.size === 0;
}
