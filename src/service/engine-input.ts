import type { ConversionPair } from '../engines/pairs.ts';
import type { Engine } from '../engines/types.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import { headerPixels } from '../inputs/image-header.ts';
import type { SpooledFile } from './spooled-file.ts';

/**
 * An upload up to this size travels in its conversion's record (`input_bytes`, base64) where the
 * engine reads bytes: no input file is written, read back and removed, which for a small image
 * was a third of the daemon's hops to the thread pool and an inode made and freed. The record
 * is that much larger while the conversion is active, and its shard is written twice meanwhile.
 */
export const INLINE_INPUT_BYTES = 32 * 1024;

type InputFacts = Pick<ConversionRecord, 'inputs' | 'mark_images' | 'input_pixels'>;

/**
 * Whether a run of `pair` on `engine` needs no run directory with the input under the user's name:
 * one engine, one step, one input, and either
 * - a source the engine reads by its content and that reaches no other file (Engine.readsAnyNameOf:
 *   PDFium's PDFs, libvips's raster images). Where the engine's library picks its reader from the
 *   bytes (Engine.picksReaderFromBytes: libvips), only where the submission saw the upload's bytes
 *   to be an image's (a PNG, GIF or JPEG header read from the upload itself: `input_pixels`). A
 *   declared source is only what the client says, and a URL's content is not looked at: an SVG
 *   sent as `.png` would be read by librsvg, which draws an `<image href>` from the file's own
 *   folder, beside every other conversion's stored input; or
 * - a source the engine puts under the user's name in a directory of its own
 *   (Engine.namesItsInputOf): it is given the name (EngineJob.inputName) with the stored input.
 */
export function runsWithoutNames(engine: Engine, pair: ConversionPair, record: InputFacts): boolean {
  if (pair.steps || pair.fallback || record.inputs?.length || record.mark_images?.length) return false;
  const byContent = engine.readsAnyNameOf?.includes(pair.source) === true && (engine.picksReaderFromBytes !== true || typeof record.input_pixels === 'number');
  return byContent || engine.namesItsInputOf?.includes(pair.source) === true;
}

/** Whether a run of `pair` on `engine` can be given its input as bytes (Engine.readsBytesOf). */
export function runsFromBytes(engine: Engine, pair: ConversionPair, record: InputFacts): boolean {
  return engine.readsBytesOf?.includes(pair.source) === true && engine.readsAnyNameOf?.includes(pair.source) === true && runsWithoutNames(engine, pair, record);
}

/**
 * The upload's bytes as the record keeps them (base64), where they are all in memory, small
 * enough, and the pair's engine reads them; undefined where the upload becomes a stored file.
 */
export function inlineInput(file: SpooledFile, engine: Engine | undefined, pair: ConversionPair): string | undefined {
  if (!file.inMemory || !file.head || file.head.length !== file.size || file.size > INLINE_INPUT_BYTES) return undefined;
  if (!engine || !runsFromBytes(engine, pair, { input_pixels: headerPixels(file.head) })) return undefined;
  return file.head.toString('base64');
}
