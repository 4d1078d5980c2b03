import { ConversionFailure } from '../../errors/api-error.ts';
import { BYTES_PER_MB } from '../../model/plan.ts';
import { formatMegabytes } from '../units.ts';

/**
 * Per-format input caps of the data engine, in bytes: the formats whose parser holds the whole
 * document, at a multiple of its size (measured: `yaml` about 200 bytes of heap per byte of a
 * YAML file, JSON.parse 5 to 10, markdown-it about 30).
 */
export interface InputCaps {
  md: number;
  json: number;
  yaml: number;
}

const MiB = BYTES_PER_MB;

export const DEFAULT_INPUT_CAPS: InputCaps = { md: 8 * MiB, json: 64 * MiB, yaml: 4 * MiB };

const NAMES: Record<keyof InputCaps, string> = { md: 'Markdown', json: 'JSON', yaml: 'YAML' };


/** Fails a file above its format's cap with file_too_large, naming both sizes and the setting. */
export function checkInputCap(format: string, size: number, caps: InputCaps): void {
  if (!(format in NAMES)) return;
  const key = format as keyof InputCaps;
  const cap = caps[key];
  if (size <= cap) return;
  throw new ConversionFailure(
    'file_too_large',
    `The ${NAMES[key]} file is ${formatMegabytes(size)}; this service reads ${NAMES[key]} files of at most ${formatMegabytes(cap)} (setting input_cap_mb.${key}).`,
  );
}
