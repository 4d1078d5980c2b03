import type { FormatDetails } from '../src/client/types.ts';
import { renderFieldMessage } from '../src/errors/messages.ts';
import { validateOptions } from '../src/formats/options.ts';
import type { ConversionOptions } from '../src/model/conversion.ts';
import { usageError } from './errors.ts';

/**
 * Checks `-O key=value` and `--variant` against the format details before any upload, with the
 * same rules the service applies (src/formats/options.ts), so a typo costs a second instead of
 * an upload. Returns the options typed (numbers, booleans) as the API expects them, or null when
 * the target is not listed under this source name: the server may know it by another name
 * (jpeg/jpg) and decides itself.
 */
export function checkOptions(
  details: FormatDetails,
  target: string,
  raw: [string, string][],
  variant: string | undefined,
): ConversionOptions | null {
  const entry = details.data.find((candidate) => candidate.target === target.toLowerCase());
  if (!entry) return null;
  const problems: string[] = [];
  if (variant !== undefined) {
    const keys = entry.variants.map((v) => v.key);
    if (!keys.includes(variant)) {
      problems.push(keys.length
        ? `--variant ${variant}: must be one of: ${keys.join(', ')}`
        : `--variant ${variant}: ${details.source} → ${entry.target} has no variants`);
    }
  }
  const requested = Object.fromEntries(raw);
  const outcome = validateOptions(
    { source: details.source, target: entry.target, engine: '', kind: 'image', options: entry.options, variants: entry.variants },
    requested,
  );
  if (!outcome.ok) {
    for (const [field, problem] of Object.entries(outcome.problems)) {
      problems.push(`-O ${field.replace(/^options\./, '')}: ${renderFieldMessage(problem.reason, problem.params, 'en')}`);
    }
  }
  if (problems.length > 0) {
    throw usageError(
      `invalid options for ${details.source} → ${entry.target}:\n  ${problems.join('\n  ')}`,
      `see \`conv formats ${details.source}\``,
      'validation_failed',
    );
  }
  // Only what was asked for: the server applies the defaults and reports them on the conversion.
  const typed = outcome.ok ? outcome.options : {};
  return Object.fromEntries(Object.keys(requested).map((name) => [name, typed[name]!]));
}
