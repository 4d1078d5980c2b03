import type { ConversionOptions, OptionValue } from '../model/conversion.ts';
import type { FieldReason } from '../errors/messages.ts';
import type { ConversionPair, OptionDescriptor } from './types.ts';

export interface FieldProblem {
  reason: FieldReason;
  params: Record<string, string | number>;
}

export type OptionsOutcome =
  | { ok: true; options: ConversionOptions }
  | { ok: false; problems: Record<string, FieldProblem> };

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

function coerce(descriptor: OptionDescriptor, raw: unknown): { value: OptionValue } | { problem: FieldProblem } {
  switch (descriptor.type) {
    case 'range':
    case 'number': {
      const value = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      const integer = descriptor.type === 'range';
      if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
        return { problem: { reason: 'invalid_type', params: { expected: integer ? 'integer' : 'number' } } };
      }
      const min = descriptor.min ?? -Infinity;
      const max = descriptor.max ?? Infinity;
      if (value < min || value > max) {
        return { problem: { reason: 'out_of_range', params: { min: String(descriptor.min ?? '-∞'), max: String(descriptor.max ?? '∞') } } };
      }
      return { value };
    }
    case 'bool': {
      if (typeof raw === 'boolean') return { value: raw };
      const word = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim().toLowerCase() : '';
      if (TRUE_WORDS.has(word)) return { value: true };
      if (FALSE_WORDS.has(word)) return { value: false };
      return { problem: { reason: 'invalid_type', params: { expected: 'boolean' } } };
    }
    case 'enum': {
      const word = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim() : undefined;
      if (word !== undefined && descriptor.values.includes(word)) return { value: word };
      return { problem: { reason: 'not_allowed', params: { values: descriptor.values.join(', ') } } };
    }
  }
}

/**
 * Checks raw options (strings from forms, typed values from JSON) against the pair's descriptors
 * and returns them typed, with every default applied: the options a conversion shows are the ones
 * that were applied.
 */
export function validateOptions(pair: ConversionPair, raw: Record<string, unknown>): OptionsOutcome {
  const problems: Record<string, FieldProblem> = {};
  const options: ConversionOptions = {};
  const known = new Map(pair.options.map((d) => [d.name, d]));
  for (const [name, value] of Object.entries(raw)) {
    const descriptor = known.get(name);
    if (!descriptor) {
      problems[`options.${name}`] = {
        reason: 'unknown_option',
        params: { values: pair.options.map((d) => d.name).join(', ') || '-' },
      };
      continue;
    }
    const outcome = coerce(descriptor, value);
    if ('problem' in outcome) problems[`options.${name}`] = outcome.problem;
    else options[name] = outcome.value;
  }
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  for (const descriptor of pair.options) {
    if (!(descriptor.name in options) && descriptor.default !== null) options[descriptor.name] = descriptor.default;
  }
  return { ok: true, options };
}
