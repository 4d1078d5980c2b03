import type { OptionValue } from '../model/conversion.ts';

export type OptionType = 'range' | 'number' | 'enum' | 'bool';

/** Option descriptor of spec 2.5. `min`/`max` exist for range and number, `values` for enum. */
export interface OptionDescriptor {
  name: string;
  type: OptionType;
  values: string[];
  min?: number;
  max?: number;
  default: OptionValue | null;
  label: string;
}

export interface VariantDescriptor {
  key: string;
  label: string;
}

/**
 * Kinds of conversion; each has a credit weight (DESIGN.md: image 1, pdf 1, data 1, audio 2,
 * document 2 (office, markup, PDF pages), video 4).
 */
export type ConversionKind = 'image' | 'pdf' | 'data' | 'audio' | 'document' | 'video';

/** One supported (source, target) pair, and what it takes. */
export interface ConversionPair {
  source: string;
  target: string;
  /** Name of the engine that runs it (`Engine.name`). */
  engine: string;
  kind: ConversionKind;
  options: OptionDescriptor[];
  /** Empty when the conversion has a single mode; otherwise the first is the default. */
  variants: VariantDescriptor[];
}

/** What is known of one format: its file extensions (first is canonical) and MIME type. */
export interface FormatInfo {
  key: string;
  extensions: string[];
  mime: string;
}
