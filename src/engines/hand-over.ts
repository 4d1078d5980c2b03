import { ConversionFailure, HandOver } from '../errors/api-error.ts';
import type { ConversionPair } from './pairs.ts';
import type { Engine, EngineJob, EngineOutput } from './types.ts';

/**
 * Where an engine handed its file over (HandOver): the pair's fallback and its engine. Any other
 * error is rethrown; a hand-over with no fallback available (no Chromium) fails the conversion
 * with the engine's words, `input_invalid`, unless the engine kept a result of its own for that
 * case (`kept`): then that result stands.
 */
export function handedOver(error: unknown, pair: ConversionPair, engineOf: (name: string) => Engine | undefined): { pair: ConversionPair; engine: Engine } | { kept: EngineOutput } {
  if (!(error instanceof HandOver)) throw error;
  const engine = pair.fallback ? engineOf(pair.fallback.engine) : undefined;
  if (!pair.fallback || !engine) {
    if (error.kept) return { kept: { size: error.kept.size } };
    throw new ConversionFailure('input_invalid', error.message);
  }
  return { pair: pair.fallback, engine };
}

/** Converts `job` on `engine`, or on the fallback it hands the file to (handedOver). */
export function convertOrHandOver(engine: Engine, pair: ConversionPair, job: EngineJob, engineOf: (name: string) => Engine | undefined): Promise<EngineOutput | void> {
  return engine.convert(job).catch((error: unknown) => {
    const to = handedOver(error, pair, engineOf);
    return 'kept' in to ? to.kept : to.engine.convert(job);
  });
}
