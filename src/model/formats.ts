import type { OptionValue } from './conversion.ts';

/**
 * Spec 2.5's four types, and `text` (this service's own, for what none of them can say: a page
 * range such as `1-3,5`, a document's password), with `max` its length and `pattern` its form.
 */
export type OptionType = 'range' | 'number' | 'enum' | 'bool' | 'text';

/**
 * Option descriptor, as an engine declares it and as GET /v1/formats/{source} returns it.
 * `min`/`max` exist for range and number, `values` for enum.
 */
export interface OptionDescriptor {
  name: string;
  type: OptionType;
  values: string[];
  min?: number;
  max?: number;
  /** text: the value must match this regular expression (whole). */
  pattern?: string;
  /**
   * Given to the engine but never shown with the conversion's options nor kept after its end
   * (a password).
   */
  secret?: boolean;
  /**
   * The value is the name of a file sent with the request beside the input (another multipart
   * `file` part): an image drawn as a watermark. That file is not converted nor merged.
   */
  file?: boolean;
  /** Means something only beside one of these options (a watermark's opacity beside its text). */
  requires?: string[];
  /** Cannot be given beside any of these (PDF/A beside encryption). */
  excludes?: string[];
  default: OptionValue | null;
  label: string;
}

export interface VariantDescriptor {
  key: string;
  label: string;
}

/** GET /v1/formats: every source format and the targets it converts to. */
export interface FormatListing { data: { source: string; targets: string[] }[] }

/** GET /v1/formats/{source}: each target of one source, with what the caller's plan allows. */
export interface FormatDetails {
  source: string;
  data: { target: string; max_upload_mb: number; credit_weight: number; options: OptionDescriptor[]; variants: VariantDescriptor[] }[];
}
