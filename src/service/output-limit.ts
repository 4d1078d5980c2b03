import { ConversionFailure } from '../errors/api-error.ts';
import { isOutputCapFailure } from '../engines/output-cap.ts';
import { formatMegabytes } from '../engines/units.ts';
import { BYTES_PER_MB, type Plan } from '../model/plan.ts';

export interface OutputLimit {
  bytes: number;
  /** Why it is that much, for the failure's message. */
  rule: string;
}

/**
 * The largest result a conversion may write: `ratio` times its input, but at least `floorMb` (a
 * small SVG may rightly become a large PNG) and never more than the plan's `max_output_mb`. A
 * ratio of 0 leaves only the plan's cap.
 */
export function outputLimit(plan: Plan, inputBytes: number | null, ratio: number, floorMb: number): OutputLimit {
  const planBytes = plan.max_output_mb * BYTES_PER_MB;
  const planRule = `at most ${plan.max_output_mb} MB on the ${plan.name} plan`;
  if (ratio <= 0) return { bytes: planBytes, rule: planRule };
  const byInput = Math.max(floorMb * BYTES_PER_MB, ratio * (inputBytes ?? 0));
  if (byInput >= planBytes) return { bytes: planBytes, rule: planRule };
  return { bytes: byInput, rule: `${ratio} times the input, at least ${floorMb} MB` };
}

/** The limit, or the room left on the server's disk above its floor when that is less. */
export function withinRoom(limit: OutputLimit, headroom: number): OutputLimit {
  if (headroom >= limit.bytes) return limit;
  return { bytes: Math.max(0, Math.floor(headroom)), rule: "the room left on the server's disk" };
}

/** The failure of a result over its limit, with the rule that set it. */
export function outputLimitFailure(limit: OutputLimit, size?: number): ConversionFailure {
  const what = size === undefined ? 'The result would be larger than' : `The result (${formatMegabytes(size)}) is larger than`;
  return new ConversionFailure('conversion_failed', `${what} its limit of ${formatMegabytes(limit.bytes)} (${limit.rule}).`);
}

/** An engine's own output-cap failure, re-told with the rule; any other error as it is. */
export function explainOutputCap(error: unknown, limit: OutputLimit): unknown {
  return isOutputCapFailure(error) ? outputLimitFailure(limit) : error;
}
