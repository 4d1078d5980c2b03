/** Reads a zip result back with yauzl, an independent reader: each entry's name and bytes, in archive order. */
import { fromBuffer, type Entry } from 'yauzl';

export async function zipEntries(bytes: Buffer): Promise<{ name: string; bytes: Buffer }[]> {
  const zip = await new Promise<import('yauzl').ZipFile>((resolve, reject) => fromBuffer(bytes, { lazyEntries: true }, (error, file) => (error ? reject(error) : resolve(file))));
  const entries: { name: string; bytes: Buffer }[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: Entry) => {
      zip.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('error', reject);
        stream.on('end', () => {
          entries.push({ name: entry.fileName, bytes: Buffer.concat(chunks) });
          zip.readEntry();
        });
      });
    });
    zip.readEntry();
  });
  return entries;
}
