import { ConversionFailure, HandOver } from '../errors/api-error.ts';
import type { ConversionPair } from './pairs.ts';
import type { Engine } from './types.ts';

/**
 * Where an engine handed its file over (HandOver): the pair's fallback and its engine. Any other
 * error is rethrown; a hand-over with no fallback available (no Chromium) fails the conversion
 * with the engine's words, `input_invalid`.
 */
export function handedOver(error: unknown, pair: ConversionPair, engineOf: (name: string) => Engine | undefined): { pair: ConversionPair; engine: Engine } {
  if (!(error instanceof HandOver)) throw error;
  const engine = pair.fallback ? engineOf(pair.fallback.engine) : undefined;
  if (!pair.fallback || !engine) throw new ConversionFailure('input_invalid', error.message);
  return { pair: pair.fallback, engine };
}
