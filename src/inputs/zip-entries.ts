import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import yauzl, { type Entry, type Options, type ZipFile } from 'yauzl';

/** A zip file on disk, opened by yauzl. */
export const openZipFile = promisify(yauzl.open) as (path: string, options: Options) => Promise<ZipFile>;

/** An entry's content, unpacked as it is read (yauzl checks its size against the headers when asked to). */
export function entryStream(zip: ZipFile, entry: Entry): Promise<Readable> {
  return promisify(zip.openReadStream.bind(zip))(entry);
}

/** An entry's content whole (for parts read into memory: a page's files, a document part). */
export async function entryBytes(zip: ZipFile, entry: Entry): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await entryStream(zip, entry)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The next entry of a yauzl zip opened with `lazyEntries`, or null at its end. */
export function nextEntry(zip: ZipFile): Promise<Entry | null> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
    };
    const onEntry = (entry: Entry) => { cleanup(); resolve(entry); };
    const onEnd = () => { cleanup(); resolve(null); };
    const onError = (error: Error) => { cleanup(); reject(error); };
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}
