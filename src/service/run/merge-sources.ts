import { createWriteStream } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Entry } from 'yauzl';
import { openZipBuffer, storedData } from '../../inputs/stored-zip.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { FormatRegistry } from '../../formats/registry.ts';
import { entryBytes, entryStream, nextEntry, openZipFile } from '../../inputs/zip-entries.ts';
import type { ConversionInputFile, MarkImageFile } from '../../model/conversion.ts';
import { bundleEntryName, markEntryName } from '../merge-bundle.ts';
import { convertOnEngines, type EngineCall } from './engine-call.ts';
import type { EngineGates } from './engine-gates.ts';

const SMALL_ENTRY = 256 * 1024;
/** A bundle read into memory whole, at most (a merge of fifty one-page PDFs is 70 KiB). */
const READ_WHOLE_BUNDLE = 16 * 1024 * 1024;

/** The bundle's files (`only` these, when given), written beside the output: entry name -> path. */
async function unpackBundle(bundle: string, bundleSize: number, directory: string, expected: ReadonlySet<string>, only?: ReadonlySet<string>): Promise<Map<string, string>> {
  // A small bundle is read at once: from a file, each entry costs reads of its header and its data, one after another.
  const inMemory = bundleSize <= READ_WHOLE_BUNDLE ? await readFile(bundle) : undefined;
  const zip = inMemory
    ? await openZipBuffer(inMemory)
    : await openZipFile(bundle, { lazyEntries: true });
  const paths = new Map<string, string>();
  // Small files' writes go on while the next entries are read: each waits on the disk, not on the others.
  const writes: Promise<void>[] = [];
  try {
    for (let entry: Entry | null = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      // The service wrote this zip itself; a name it did not write is not followed anywhere.
      if (!expected.has(entry.fileName)) throw new Error(`unexpected entry ${entry.fileName} in a merge bundle`);
      if (only && !only.has(entry.fileName)) continue;
      const path = join(directory, entry.fileName);
      const stored = inMemory ? storedData(inMemory, entry) : undefined;
      if (stored) {
        writes.push(writeFile(path, stored));
        paths.set(entry.fileName, path);
        continue;
      }
      // A small file (a merge's one-page PDF) is written whole: a write stream and a pipeline each cost more than it.
      if (entry.uncompressedSize <= SMALL_ENTRY) writes.push(writeFile(path, await entryBytes(zip, entry)));
      else await pipeline(await entryStream(zip, entry), createWriteStream(path));
      paths.set(entry.fileName, path);
    }
  } finally {
    zip.close();
    // Every write settles before the directory is handed on or removed after a failure.
    const failed = (await Promise.allSettled(writes)).find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return paths;
}

/**
 * A bundle's files ready for the engine: its inputs as PDFs in order (files, or the bundle's
 * entries where the engine reads them itself), its images to draw by option.
 */
export interface BundleSources {
  pdfs: string[];
  bundled?: string[];
  markImages?: Record<string, string>;
}

/**
 * A merge's files as PDFs, in order: the bundle unpacked, each file that is not a PDF converted
 * by its own pair (a docx by LibreOffice, a PNG by the pdf engine), within that pair's time limit
 * and the run's output cap. A file that fails fails the merge, its message naming the file. The
 * images to draw (`marks`) come out as they went in.
 */
export async function mergeSources(
  call: EngineCall, inputs: readonly ConversionInputFile[], marks: readonly MarkImageFile[], registry: FormatRegistry, gates: EngineGates, readsBundles = false,
): Promise<BundleSources> {
  const directory = join(dirname(call.outputPath), 'merge');
  await mkdir(directory);
  const names = inputs.map((input, index) => bundleEntryName(index, input.format));
  const markNames = marks.map((mark) => markEntryName(mark.option, mark.format));
  const bundleSize = (await stat(call.inputPath)).size;
  // PDFs only, and few bytes of them: the engine takes them from the bundle, no file is written for
  // each (and with no image to draw the daemon does not read the bundle at all).
  const bundled = readsBundles && inputs.every((input) => input.format === 'pdf') && bundleSize <= READ_WHOLE_BUNDLE;
  const unpacked = bundled && marks.length === 0
    ? new Map<string, string>()
    : await unpackBundle(call.inputPath, bundleSize, directory, new Set([...names, ...markNames]), bundled ? new Set(markNames) : undefined);
  let markImages: Record<string, string> | undefined;
  for (const [index, mark] of marks.entries()) {
    const path = unpacked.get(markNames[index]!);
    if (!path) throw new Error(`${mark.option}'s image is missing from its bundle`);
    (markImages ??= {})[mark.option] = path;
  }
  if (bundled) return { pdfs: [], bundled: names, ...(markImages ? { markImages } : {}) };
  const pdfs: string[] = [];
  for (const [index, input] of inputs.entries()) {
    call.signal.throwIfAborted();
    const path = unpacked.get(names[index]!);
    if (!path) throw new Error(`file ${index + 1} of the merge is missing from its bundle`);
    if (input.format === 'pdf') {
      pdfs.push(path);
      continue;
    }
    const pair = registry.pair(input.format, 'pdf');
    const engine = pair ? registry.engine(pair.engine) : undefined;
    if (!pair || !engine) throw new ConversionFailure('conversion_failed', `${input.name}: ${input.format} no longer converts to pdf here.`);
    const output = join(directory, `${index + 1}.converted.pdf`);
    const share = (percent: number) => call.onProgress(Math.floor(((index + percent / 100) / (inputs.length + 1)) * 100));
    try {
      await convertOnEngines({
        ...call,
        record: { ...call.record, source: input.format, target: 'pdf', variant: pair.variants[0]?.key ?? null, options: {}, secret_options: {} },
        inputPath: path, outputPath: output, onProgress: share,
      }, pair, engine, registry, gates);
    } catch (error) {
      if (error instanceof ConversionFailure) throw new ConversionFailure(error.code, `${input.name}: ${error.message}`, error.details);
      throw error;
    }
    pdfs.push(output);
  }
  return { pdfs, ...(markImages ? { markImages } : {}) };
}
