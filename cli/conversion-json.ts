import type { PublicConversion } from '../src/model/conversion.ts';

/**
 * A conversion as `conv convert --json` prints it: the API object, plus `path`, the absolute path
 * of the file `conv` wrote, when it wrote one (as `conv download --json` names it). In-process
 * there is no server: the object
 * has no `links` and its result no `download_url` or `expires_at` (they would name a `local:` URL
 * nobody can open, and the expiry of a store that is gone when `conv` ends).
 */
export type ConversionJson = Omit<PublicConversion, 'links' | 'result'> & {
  links?: PublicConversion['links'];
  result: Partial<NonNullable<PublicConversion['result']>> | null;
  path?: string;
};

export function conversionJson(conversion: PublicConversion, options: { local: boolean; savedTo?: string | null }): ConversionJson {
  const saved = options.savedTo ? { path: options.savedTo } : {};
  if (!options.local) return { ...conversion, ...saved };
  const { links: _links, result, ...rest } = conversion;
  const kept = result ? (({ download_url: _url, expires_at: _expiry, ...fields }) => fields)(result) : null;
  return { ...rest, result: kept, ...saved };
}
