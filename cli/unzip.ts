import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { open as openZip, type Entry, type ZipFile } from 'yauzl';
import { CliError } from './errors.ts';
import { EXIT } from './exit-codes.ts';
import { trackPartialFile } from './partial-files.ts';
import type { NameReservations } from './save.ts';

/** A name an entry may be written under: a plain file name, nothing that climbs or hides. */
function safeName(name: string): string | undefined {
  if (name === '' || name.endsWith('/') || name.includes('\\') || name.includes('/') || name.startsWith('.')) return undefined;
  return basename(name);
}

/**
 * Unpacks a zip result (a split PDF's parts, a document's pages as images) into `dir`, each file
 * written under a temporary name and renamed when complete, then removes the zip. Entries are
 * plain file names (the server writes no folders); any other is refused. Returns the paths written.
 */
export async function unpackResult(zipPath: string, dir: string, names: NameReservations): Promise<string[]> {
  const zip = await new Promise<ZipFile>((resolve, reject) => openZip(zipPath, { lazyEntries: true }, (error, file) => (error ? reject(error) : resolve(file))));
  const written: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: Entry) => {
        const name = safeName(entry.fileName);
        if (name === undefined) {
          reject(new CliError(EXIT.error, 'unsafe_archive', `the result holds an entry that is not a plain file name: ${JSON.stringify(entry.fileName)}`));
          return;
        }
        zip.openReadStream(entry, (error, stream) => {
          if (error) return reject(error);
          const target = join(dir, names.reserve(name));
          const temp = join(dir, `.${basename(target)}.${randomBytes(6).toString('hex')}.part`);
          const untrack = trackPartialFile(temp);
          pipeline(stream, createWriteStream(temp, { flags: 'wx' }))
            .then(() => rename(temp, target))
            .then(() => {
              written.push(target);
              zip.readEntry();
            }, async (failure: unknown) => {
              await unlink(temp).catch(() => undefined);
              reject(failure);
            })
            .finally(untrack);
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  await unlink(zipPath);
  return written;
}
