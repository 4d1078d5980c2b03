import { ConversionFailure } from '../../errors/api-error.ts';

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

const MiB = 1024 * 1024;

export const DEFAULT_INPUT_CAPS: InputCaps = { md: 8 * MiB, json: 64 * MiB, yaml: 4 * MiB };

const NAMES: Record<keyof InputCaps, string> = { md: 'Markdown', json: 'JSON', yaml: 'YAML' };

function megabytes(bytes: number): string {
  return `${Number((bytes / MiB).toFixed(1))} MB`;
}

/** Fails a file above its format's cap with file_too_large, naming both sizes and the setting. */
export function checkInputCap(format: string, size: number, caps: InputCaps): void {
  if (!(format in NAMES)) return;
  const key = format as keyof InputCaps;
  const cap = caps[key];
  if (size <= cap) return;
  throw new ConversionFailure(
    'file_too_large',
    `The ${NAMES[key]} file is ${megabytes(size)}; this service reads ${NAMES[key]} files of at most ${megabytes(cap)} (setting input_cap_mb.${key}).`,
  );
}
