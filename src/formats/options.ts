import type { ConversionOptions, OptionValue } from '../model/conversion.ts';
import type { FieldReason } from '../errors/messages.ts';
import type { ConversionPair, OptionDescriptor } from '../engines/pairs.ts';

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
    case 'text': {
      if (typeof raw !== 'string') return { problem: { reason: 'invalid_type', params: { expected: 'string' } } };
      if (descriptor.max !== undefined && raw.length > descriptor.max) return { problem: { reason: 'too_long', params: { max: descriptor.max } } };
      // The whole value, as the descriptor says (and as an HTML form's pattern attribute checks it).
      if (descriptor.pattern !== undefined && !new RegExp(`^(?:${descriptor.pattern})$`, 'u').test(raw)) {
        return { problem: { reason: 'pattern_mismatch', params: { pattern: descriptor.pattern } } };
      }
      return { value: raw };
    }
  }
}

/** The options of a validated set whose descriptors say they are secret (a password), and the others. */
export function splitSecretOptions(pair: ConversionPair, options: ConversionOptions): { shown: ConversionOptions; secret: ConversionOptions } {
  const secretNames = new Set(pair.options.filter((d) => d.secret).map((d) => d.name));
  const shown: ConversionOptions = {};
  const secret: ConversionOptions = {};
  for (const [name, value] of Object.entries(options)) (secretNames.has(name) ? secret : shown)[name] = value;
  return { shown, secret };
}

/** Options of which the second, when both are given, must be greater than the first. */
const ORDERED: readonly [string, string][] = [['trim_start', 'trim_end']];
/** Options holding page ranges (`1-3,5`): every range from a page to a later one, from page 1. */
const PAGE_RANGES: readonly string[] = ['pages', 'page_ranges', 'rotate_pages', 'split_ranges'];
/** Options that mean something only together (a paper's width without its height). */
const TOGETHER: readonly [string, string][] = [['paper_width', 'paper_height']];

/**
 * Options that each pass but contradict each other (a clip ending before it starts, pages 5-3):
 * refused at submission, naming both, rather than accepted and failed by the engine later.
 */
function contradictions(pair: ConversionPair, options: ConversionOptions): Record<string, FieldProblem> {
  const problems: Record<string, FieldProblem> = {};
  // A switch sent off asks for nothing (a form sends every box, ticked or not): it neither needs nor excludes.
  const given = (name: string): boolean => name in options && options[name] !== false;
  for (const descriptor of pair.options) {
    if (!given(descriptor.name)) continue;
    const { requires = [], excludes = [] } = descriptor;
    if (requires.length > 0 && !requires.some(given)) {
      problems[`options.${descriptor.name}`] = { reason: 'requires_other', params: { other: requires.join(' | ') } };
    }
    const excluded = excludes.find(given);
    if (excluded !== undefined) problems[`options.${descriptor.name}`] = { reason: 'excludes_other', params: { other: excluded } };
  }
  for (const [first, second] of ORDERED) {
    const [a, b] = [options[first], options[second]];
    if (typeof a !== 'number' || typeof b !== 'number' || b > a) continue;
    problems[`options.${first}`] = { reason: 'must_precede', params: { other: second, value: b } };
    problems[`options.${second}`] = { reason: 'must_follow', params: { other: first, value: a } };
  }
  for (const name of PAGE_RANGES) {
    const value = options[name];
    if (typeof value !== 'string' || value === 'all') continue;
    const backward = value.split(',').find((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return !(from! >= 1 && to! >= from!);
    });
    if (backward !== undefined) problems[`options.${name}`] = { reason: 'backward_range', params: { range: backward } };
  }
  for (const [a, b] of TOGETHER) {
    if ((a in options) === (b in options)) continue;
    const [given, missing] = a in options ? [a, b] : [b, a];
    problems[`options.${given}`] = { reason: 'requires_other', params: { other: missing } };
  }
  return problems;
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
  Object.assign(problems, contradictions(pair, options));
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  for (const descriptor of pair.options) {
    if (!(descriptor.name in options) && descriptor.default !== null) options[descriptor.name] = descriptor.default;
  }
  return { ok: true, options };
}
