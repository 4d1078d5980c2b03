import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { open as openZip, type Entry, type ZipFile } from 'yauzl';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { FormatRegistry } from '../../formats/registry.ts';
import { nextEntry } from '../../inputs/zip-entries.ts';
import type { ConversionInputFile, MarkImageFile } from '../../model/conversion.ts';
import { bundleEntryName, markEntryName } from '../merge-bundle.ts';
import { convertOnEngines, type EngineCall } from './engine-call.ts';
import type { EngineGates } from './engine-gates.ts';

/** The bundle's files, written beside the output: entry name -> path. */
async function unpackBundle(bundle: string, directory: string, expected: ReadonlySet<string>): Promise<Map<string, string>> {
  const zip = await new Promise<ZipFile>((resolve, reject) => openZip(bundle, { lazyEntries: true }, (error, file) => (error ? reject(error) : resolve(file))));
  const paths = new Map<string, string>();
  try {
    for (let entry: Entry | null = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      // The service wrote this zip itself; a name it did not write is not followed anywhere.
      if (!expected.has(entry.fileName)) throw new Error(`unexpected entry ${entry.fileName} in a merge bundle`);
      const path = join(directory, entry.fileName);
      const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => zip.openReadStream(entry!, (error, read) => (error ? reject(error) : resolve(read))));
      await pipeline(stream, createWriteStream(path));
      paths.set(entry.fileName, path);
    }
  } finally {
    zip.close();
  }
  return paths;
}

/** A bundle's files ready for the engine: its inputs as PDFs in order, its images to draw by option. */
export interface BundleSources {
  pdfs: string[];
  markImages?: Record<string, string>;
}

/**
 * A merge's files as PDFs, in order: the bundle unpacked, each file that is not a PDF converted
 * by its own pair (a docx by LibreOffice, a PNG by the pdf engine), within that pair's time limit
 * and the run's output cap. A file that fails fails the merge, its message naming the file. The
 * images to draw (`marks`) come out as they went in.
 */
export async function mergeSources(call: EngineCall, inputs: readonly ConversionInputFile[], marks: readonly MarkImageFile[], registry: FormatRegistry, gates: EngineGates): Promise<BundleSources> {
  const directory = join(dirname(call.outputPath), 'merge');
  await mkdir(directory);
  const names = inputs.map((input, index) => bundleEntryName(index, input.format));
  const markNames = marks.map((mark) => markEntryName(mark.option, mark.format));
  const unpacked = await unpackBundle(call.inputPath, directory, new Set([...names, ...markNames]));
  let markImages: Record<string, string> | undefined;
  for (const [index, mark] of marks.entries()) {
    const path = unpacked.get(markNames[index]!);
    if (!path) throw new Error(`${mark.option}'s image is missing from its bundle`);
    (markImages ??= {})[mark.option] = path;
  }
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
