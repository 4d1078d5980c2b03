import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import type { Entry, ZipFile } from 'yauzl';
import { ConversionFailure } from '../../errors/api-error.ts';
import { entryBytes, nextEntry, openZipFile } from '../../inputs/zip-entries.ts';

/**
 * The conversion's own files, which are all the page may load: the uploaded HTML as
 * /index.html, or the files of an uploaded zip under the folder that holds its index.html.
 * Served from memory at SITE_ORIGIN by the request handler (requests.ts).
 */
export type Site = Map<string, Buffer>;

/** An origin that cannot exist (RFC 6761 `.invalid`): nothing outside convd answers for it. */
export const SITE_ORIGIN = 'http://convd.invalid';
export const ENTRY_PATH = '/index.html';

/** What a zip may hold: entries, bytes unpacked (all and each). */
export const ZIP_LIMITS = { entries: 2_000, totalBytes: 256 * 1024 * 1024 } as const;

export async function loadSite(source: string, inputPath: string): Promise<Site> {
  if (source === 'zip') return loadZip(inputPath);
  return new Map([[ENTRY_PATH, await readFile(inputPath)]]);
}

/**
 * Unpacks a zip into memory: yauzl checks each entry's size against its header while inflating
 * (zlib, on libuv's threads), names that climb out (`../`), are absolute or hold a backslash are
 * refused, and the limits hold against a zip bomb. The page's root is the folder of the
 * shallowest index.html.
 */
async function loadZip(path: string): Promise<Site> {
  let zip: ZipFile;
  try {
    zip = await openZipFile(path, { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true });
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The zip cannot be read: ${describe(error)}`);
  }
  const files: Site = new Map();
  let total = 0;
  try {
    if (zip.entryCount > ZIP_LIMITS.entries) {
      throw new ConversionFailure('input_invalid', `The zip holds ${zip.entryCount.toLocaleString('en-US')} entries; at most ${ZIP_LIMITS.entries.toLocaleString('en-US')} are read.`);
    }
    for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      if (entry.fileName.endsWith('/')) continue;
      const name = posix.normalize(`/${entry.fileName}`);
      if (entry.fileName.includes('\\') || entry.fileName.startsWith('/') || entry.fileName.split('/').includes('..')) {
        throw new ConversionFailure('input_invalid', `The zip holds a file named outside its own folder: ${JSON.stringify(entry.fileName.slice(0, 200))}.`);
      }
      total += entry.uncompressedSize;
      if (total > ZIP_LIMITS.totalBytes) {
        throw new ConversionFailure('input_invalid', `The zip unpacks to more than ${ZIP_LIMITS.totalBytes / 1024 / 1024} MiB; that is the most a page may bring.`);
      }
      files.set(name, await entryBytes(zip, entry));
    }
  } catch (error) {
    if (error instanceof ConversionFailure) throw error;
    throw new ConversionFailure('input_invalid', `The zip cannot be read: ${describe(error)}`);
  } finally {
    zip.close();
  }
  const index = [...files.keys()].filter((name) => posix.basename(name).toLowerCase() === 'index.html')
    .sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b))[0];
  if (!index) throw new ConversionFailure('input_invalid', 'The zip holds no index.html: the page to render must be called index.html (at the top, or in its one folder).');
  const root = posix.dirname(index);
  const site: Site = new Map();
  for (const [name, bytes] of files) {
    if (name === index) site.set(ENTRY_PATH, bytes);
    else if (root === '/' || name.startsWith(`${root}/`)) site.set(root === '/' ? name : name.slice(root.length), bytes);
  }
  return site;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.htm': 'text/html; charset=utf-8', '.xhtml': 'application/xhtml+xml', '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp', '.avif': 'image/avif',
  '.ico': 'image/x-icon', '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf', '.otf': 'font/otf', '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml', '.csv': 'text/csv; charset=utf-8',
};

export function contentTypeOf(path: string): string {
  return TYPES[posix.extname(path).toLowerCase()] ?? 'application/octet-stream';
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}
