import type { ConversionPair } from '../engines/pairs.ts';
import type { Engine } from '../engines/types.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import type { SpooledFile } from './spooled-file.ts';

/**
 * An upload up to this size travels in its conversion's record (`input_bytes`, base64) where the
 * engine reads bytes: no input file is written, read back and removed, which for a small image
 * was a third of the daemon's hops to the thread pool and an inode made and freed. The record
 * is that much larger while the conversion is active, and its shard is written twice meanwhile.
 */
export const INLINE_INPUT_BYTES = 32 * 1024;

/**
 * Whether a run of `pair` on `engine` needs no directory with the input under the user's name
 * (Engine.readsAnyNameOf): one engine, one step, one input, of a source read by its content.
 */
export function runsWithoutNames(engine: Engine, pair: ConversionPair, record: Pick<ConversionRecord, 'inputs' | 'mark_images'>): boolean {
  return engine.readsAnyNameOf?.includes(pair.source) === true && !pair.steps && !pair.fallback && !record.inputs?.length && !record.mark_images?.length;
}

/** Whether a run of `pair` on `engine` can be given its input as bytes (Engine.readsBytesOf). */
export function runsFromBytes(engine: Engine, pair: ConversionPair, record: Pick<ConversionRecord, 'inputs' | 'mark_images'>): boolean {
  return runsWithoutNames(engine, pair, record) && engine.readsBytesOf?.includes(pair.source) === true;
}

/**
 * The upload's bytes as the record keeps them (base64), where they are all in memory, small
 * enough, and the pair's engine reads them; undefined where the upload becomes a stored file.
 */
export function inlineInput(file: SpooledFile, engine: Engine | undefined, pair: ConversionPair): string | undefined {
  if (!file.inMemory || !file.head || file.head.length !== file.size || file.size > INLINE_INPUT_BYTES) return undefined;
  if (!engine || !runsFromBytes(engine, pair, {})) return undefined;
  return file.head.toString('base64');
}
