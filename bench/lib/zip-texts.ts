/** Entries of a zip held in memory (a docx's XML parts, a zip of rendered pages), read with yauzl. */
import { promisify } from 'node:util';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { nextEntry } from '../../src/inputs/zip-entries.ts';

const fromBuffer = promisify(yauzl.fromBuffer) as (data: Buffer, options: yauzl.Options) => Promise<ZipFile>;

/** Parts past this size are not read: a docx's XML parts are far smaller, a bigger one is not a docx worth measuring. */
const MAX_ENTRY_BYTES = 64 * 1024 * 1024;

/** Every entry whose name `wanted` accepts, as UTF-8 text, by name. Throws when `data` is not a readable zip. */
export async function zipTexts(data: Buffer, wanted: (name: string) => boolean): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const [name, bytes] of await zipFiles(data, wanted)) texts.set(name, bytes.toString('utf8'));
  return texts;
}

/** Every entry whose name `wanted` accepts, by name, in the zip's order. Throws when `data` is not a readable zip. */
export async function zipFiles(data: Buffer, wanted: (name: string) => boolean = () => true): Promise<Map<string, Buffer>> {
  const zip = await fromBuffer(data, { lazyEntries: true, autoClose: false, decodeStrings: true, strictFileNames: false });
  const files = new Map<string, Buffer>();
  try {
    for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      if (!wanted(entry.fileName) || entry.uncompressedSize > MAX_ENTRY_BYTES) continue;
      files.set(entry.fileName, await readEntry(zip, entry));
    }
  } finally {
    zip.close();
  }
  return files;
}

async function readEntry(zip: ZipFile, entry: Entry): Promise<Buffer> {
  const stream = await promisify(zip.openReadStream.bind(zip))(entry) as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
