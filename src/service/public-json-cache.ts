import { toPublicConversion, type ConversionRecord } from '../model/conversion.ts';

interface Entry {
  record: Omit<ConversionRecord, 'input_bytes'>;
  baseUrl: string;
  json: string;
}

/** Conversions whose rendering is kept; past this the cache starts over. */
const DEFAULT_LIMIT = 4096;

/**
 * The public JSON of each conversion as last rendered, reused while the record is unchanged: a
 * client polling one conversion asks for the same bytes many times a second, and building and
 * stringifying the public object was the largest cost of answering it after the socket write.
 * A record is unchanged when every field is identical (records are replaced field by field,
 * never mutated inside), so a new field of the record needs nothing here.
 */
export class PublicJsonCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly limit = DEFAULT_LIMIT) {}

  /** Conversions held now. */
  get size(): number {
    return this.entries.size;
  }

  render(record: ConversionRecord, baseUrl: string): string {
    const cached = this.entries.get(record.id);
    if (cached && cached.baseUrl === baseUrl && sameFields(cached.record, record)) return cached.json;
    const json = JSON.stringify(toPublicConversion(record, baseUrl));
    if (!cached && this.entries.size >= this.limit) this.entries.clear();
    // Without an input kept in the record (input_bytes): up to 43 KB that nothing here shows.
    const { input_bytes: _dropped, ...kept } = record;
    this.entries.set(record.id, { record: kept, baseUrl, json });
    return json;
  }
}

/** Whether `record` is `kept` field for field, `input_bytes` (never kept, never shown) aside. */
function sameFields(kept: Omit<ConversionRecord, 'input_bytes'>, record: ConversionRecord): boolean {
  const left = kept as unknown as Record<string, unknown>;
  const right = record as unknown as Record<string, unknown>;
  let count = 0;
  for (const key in right) {
    if (key === 'input_bytes') continue;
    if (left[key] !== right[key]) return false;
    count++;
  }
  return count === Object.keys(left).length;
}
