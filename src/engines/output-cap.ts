import { ConversionFailure } from '../errors/api-error.ts';
import { formatMegabytes } from './units.ts';

const PREFIX = 'The result would be larger than its limit of ';

/** The failure of a result that grew past EngineJob.maxOutputBytes: nothing of it is kept. */
export function outputCapFailure(maxBytes: number): ConversionFailure {
  return new ConversionFailure('conversion_failed', `${PREFIX}${formatMegabytes(maxBytes)}.`);
}

/**
 * Whether an engine stopped at its output cap. Told by the message, which is this module's own
 * and is all that crosses from the engine host (a class does not).
 */
export function isOutputCapFailure(error: unknown): boolean {
  return error instanceof ConversionFailure && error.code === 'conversion_failed' && error.message.startsWith(PREFIX);
}

/** Throws outputCapFailure when `bytes` is over the job's cap (if it has one). */
export function checkOutputSize(bytes: number, maxBytes: number | undefined): void {
  if (maxBytes !== undefined && bytes > maxBytes) throw outputCapFailure(maxBytes);
}
