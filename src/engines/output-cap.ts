import { stat } from 'node:fs/promises';
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

/**
 * For an engine process that writes its result itself, with no size limit of its own (pandoc,
 * Ghostscript): the file is measured every `everyMs`, and past the cap the returned signal aborts
 * with outputCapFailure (the process group is then killed like on any abort). `stop` ends the polling.
 */
export function watchOutputCap(path: string, maxBytes: number | undefined, signal: AbortSignal, everyMs = 250): { signal: AbortSignal; stop: () => void } {
  if (maxBytes === undefined) return { signal, stop: () => undefined };
  const capped = new AbortController();
  const poll = setInterval(() => {
    stat(path).then((info) => {
      if (info.size > maxBytes) capped.abort(outputCapFailure(maxBytes));
    }, () => undefined);
  }, everyMs);
  return { signal: AbortSignal.any([signal, capped.signal]), stop: () => clearInterval(poll) };
}
