import { ConversionFailure } from '../../errors/api-error.ts';
import type { FormatRegistry } from '../../formats/registry.ts';
import type { ConversionRecord } from '../../model/conversion.ts';

/**
 * An option the pair does not offer here: the conversion was accepted where an engine that offers
 * it runs (OCR on another node, or before a restart without it). Ignoring it would make something
 * else than was asked, and charge less: it fails instead, in words.
 */
export function refuseOptionsNotOffered(registry: FormatRegistry, record: Pick<ConversionRecord, 'source' | 'target' | 'options' | 'secret_options'>): void {
  const offered = new Set(registry.pair(record.source, record.target)?.options.map((option) => option.name));
  const missing = Object.keys({ ...record.options, ...record.secret_options }).filter((name) => !offered.has(name));
  if (missing.length > 0) {
    throw new ConversionFailure('conversion_failed', `${missing.join(', ')}: not offered for ${record.source} -> ${record.target} on this server now (the engine that offers ${missing.length === 1 ? 'it' : 'them'} is not installed here).`);
  }
}
