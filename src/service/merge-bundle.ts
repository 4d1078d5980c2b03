import { writeZip } from '../engines/archive.ts';
import type { FormatRegistry } from '../formats/registry.ts';
import type { ConversionPair } from '../engines/pairs.ts';
import type { ConversionInputFile, MarkImageFile } from '../model/conversion.ts';
import type { BlobStore } from '../store/blob-store.ts';
import { conversionCost } from './credits.ts';
import type { MarkImageInput, MergeInput } from './create-request.ts';
import type { SpooledFile } from './spooled-file.ts';

/** A merge's files (and images to draw) in one zip in the spool: the stored input, one blob as any conversion's. */
export async function packMergeInputs(blobs: BlobStore, inputs: readonly MergeInput[], marks: readonly MarkImageInput[] = []): Promise<string> {
  const path = blobs.spoolPath();
  try {
    // A file no larger than the head the upload kept of it is in memory already.
    const whole = (file: SpooledFile) => (file.head && file.head.length === file.size ? { data: file.head } : {});
    const entries = [
      ...inputs.map((input, index) => ({ path: input.file.path, name: bundleEntryName(index, input.source), ...whole(input.file) })),
      ...marks.map((mark) => ({ path: mark.file.path, name: markEntryName(mark.option, mark.format), ...whole(mark.file) })),
    ];
    await writeZip(entries, path, AbortSignal.timeout(600_000));
  } catch (error) {
    await blobs.discardSpool(path);
    throw error;
  }
  return path;
}

/** The name of a merge's file in its bundle: its place and its format (`3.docx`). */
export function bundleEntryName(index: number, format: string): string {
  return `${index + 1}.${format}`;
}

/** The name of an image to draw in its bundle: its option and its format (`watermark_image.png`). */
export function markEntryName(option: string, format: string): string {
  return `${option}.${format}`;
}

/** What the record keeps of the images to draw. */
export function markImageFiles(marks: readonly MarkImageInput[]): MarkImageFile[] {
  return marks.map((mark) => ({ option: mark.option, name: mark.name, size: mark.file.size, format: mark.format }));
}

/** What the conversion shows of a merge's files. */
export function mergeInputFiles(inputs: readonly MergeInput[]): ConversionInputFile[] {
  return inputs.map((input) => ({ name: input.name, size: input.file.size, format: input.source }));
}

/**
 * The credits of a conversion: its pair's weight per started 100 MB, and for a merge, each file
 * that is not a PDF its own conversion to PDF's weight on top (a docx, two PNGs and a PDF merged:
 * pdf 1 + document 2 + image 1 + image 1).
 */
export function creditCost(registry: FormatRegistry, pair: ConversionPair, inputSize: number | null, inputs?: readonly ConversionInputFile[]): number {
  let cost = conversionCost(registry.creditWeight(pair), inputSize);
  for (const input of inputs ?? []) {
    const toPdf = input.format === 'pdf' ? undefined : registry.pair(input.format, 'pdf');
    if (toPdf) cost += conversionCost(registry.creditWeight(toPdf), input.size);
  }
  return cost;
}
