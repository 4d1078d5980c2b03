import type { ConversionWarning } from '../model/conversion.ts';

/**
 * A `content_left_out` warning, as the engines that leave parts of a document out tell them
 * (markup/left-out.ts: what pandoc's sandbox did not read; html/left-out.ts: what a page did not
 * get). A document of hundreds of includes or pictures says so in a few warnings, not hundreds.
 */
export const MAX_LEFT_OUT_WARNINGS = 10;
/** A name as long as a paragraph is cut in the warning. */
const MAX_REFERENCE_CHARS = 200;

export type LeftOutWarning = Extract<ConversionWarning, { code: 'content_left_out' }>;

/** The warning for `reference` (as the document names it, cut when long), its message made of the name as shown. */
export function leftOutWarning(reference: string, message: (shown: string) => string): LeftOutWarning {
  const shown = reference.length > MAX_REFERENCE_CHARS ? `${reference.slice(0, MAX_REFERENCE_CHARS)}…` : reference;
  return { code: 'content_left_out', reference: shown, message: message(shown) };
}
