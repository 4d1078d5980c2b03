import { handedOver } from '../../engines/hand-over.ts';
import type { Engine, EngineJob, EngineOutput } from '../../engines/types.ts';
import { formatSeconds } from '../../engines/units.ts';
import type { FormatRegistry } from '../../formats/registry.ts';
import type { ConversionPair } from '../../engines/pairs.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import type { Lane } from '../../queue/job-source.ts';
import { explainOutputCap, type OutputLimit } from '../output-limit.ts';
import { withTimeLimit } from '../time-limit.ts';
import type { EngineGates } from './engine-gates.ts';

/** What an engine is given for one conversion, and where its own time is told. */
export interface EngineCall {
  record: ConversionRecord;
  inputPath: string;
  /** The name the input goes by, where inputPath is the stored input (EngineJob.inputName). */
  inputName?: string;
  /** The input itself, where it came in the record (EngineJob.inputBytes): no file is at inputPath. */
  inputBytes?: Buffer;
  /** A merge's files, each a PDF by now, in order (EngineJob.inputPaths). */
  inputPaths?: string[];
  /** Images sent beside the input, by option (EngineJob.markImages). */
  markImages?: Record<string, string>;
  /** A merge's PDFs as entries of the bundle at inputPath (EngineJob.bundledInputs). */
  bundledInputs?: string[];
  outputPath: string;
  signal: AbortSignal;
  lane: Lane;
  maxOutput: OutputLimit;
  /** The plan's max_pages (EngineJob.maxPages). */
  maxPages?: number;
  /** The plan's max_ocr_pages (EngineJob.maxOcrPages). */
  maxOcrPages?: number;
  /** The time limit of a pair on the account's plan. */
  timeLimitOf: (pair: ConversionPair) => number;
  onProgress: (percent: number) => void;
  /** The engine's own time of an attempt (ms), as its limit counts it: told whichever way it ended. */
  onEngineTime: (ms: number) => void;
}

/**
 * Converts on the pair's engine, or on the one it hands the job over to (handedOver), each behind
 * its gate (if it limits its own runs) and within its time limit.
 */
export function convertOnEngines(call: EngineCall, pair: ConversionPair, engine: Engine, registry: FormatRegistry, gates: EngineGates): Promise<EngineOutput | void> {
  const convertOn = (chosen: ConversionPair, on: Engine): Promise<EngineOutput | void> => {
    const gate = gates.of(on);
    return gate ? gate.run(call.signal, () => convertWithinLimit(call, chosen, on), call.lane === 'quick') : convertWithinLimit(call, chosen, on);
  };
  return convertOn(pair, engine).catch((error: unknown) => {
    const handedTo = handedOver(error, pair, (name) => registry.engine(name));
    return 'kept' in handedTo ? handedTo.kept : convertOn(handedTo.pair, handedTo.engine);
  });
}

async function convertWithinLimit(call: EngineCall, chosen: ConversionPair, engine: Engine): Promise<EngineOutput | void> {
  const { record, signal, maxOutput } = call;
  const timeoutMs = call.timeLimitOf(chosen);
  const limited = withTimeLimit(signal, timeoutMs, engine.startsClock === true);
  // The engine's own time, as its limit counts it: from the start of the work (after a
  // LibreOffice instance or an engine host is started or free), not the wait before.
  let began = engine.startsClock === true ? null : performance.now();
  const startClock = () => {
    began ??= performance.now();
    limited.start();
  };
  try {
    return await engine.convert({
      inputPath: call.inputPath, outputPath: call.outputPath, source: record.source, target: record.target,
      ...(call.inputName ? { inputName: call.inputName } : {}),
      ...(call.inputBytes ? { inputBytes: call.inputBytes } : {}),
      ...(call.inputPaths ? { inputPaths: call.inputPaths } : {}),
      ...(call.markImages ? { markImages: call.markImages } : {}),
      ...(call.bundledInputs ? { bundledInputs: call.bundledInputs } : {}),
      ...(call.maxPages !== undefined ? { maxPages: call.maxPages } : {}),
      ...(call.maxOcrPages !== undefined ? { maxOcrPages: call.maxOcrPages } : {}),
      variant: record.variant, options: { ...record.options, ...record.secret_options }, signal: limited.signal, onProgress: call.onProgress, maxOutputBytes: maxOutput.bytes,
      startClock,
      timeLimitMs: timeoutMs,
      tenant: record.account_id,
      ...(call.lane === 'quick' ? { quick: true } : {}),
      ...(record.input.kind === 'url' ? { sourceUrl: record.input.url } : {}),
      ...inputFactsOf(call),
    });
  } catch (error) {
    if (limited.timedOut()) {
      throw new ConversionFailure('timeout', `The conversion took longer than the limit of ${formatSeconds(timeoutMs)}.`);
    }
    throw explainOutputCap(error, maxOutput);
  } finally {
    if (began !== null) call.onEngineTime(Math.round(performance.now() - began));
    limited.dispose();
  }
}

/**
 * What the submission read of a single uploaded file (EngineJob.inputFacts), for the job whose
 * input is that file: not a merge's or a bundle's (their input is one of several files).
 */
function inputFactsOf(call: EngineCall): Pick<EngineJob, 'inputFacts'> {
  const { record } = call;
  if (record.input_pixels === undefined || record.input_size === null || record.input.kind !== 'file') return {};
  if (record.inputs?.length || record.mark_images?.length || call.inputPaths || call.bundledInputs) return {};
  return { inputFacts: { path: call.inputPath, size: record.input_size, pixels: record.input_pixels } };
}
