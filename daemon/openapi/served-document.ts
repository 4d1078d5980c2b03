import { ROUTES } from '../routes/table.ts';
import { buildOpenApi } from './document.ts';

/** Base URLs come from the configuration or a trusted proxy: a handful at most. */
const MOST_KEPT = 16;

/**
 * The OpenAPI document as served, one text per base URL it names, built once each. A reload
 * that changes public_url clears it.
 */
export class ServedOpenApi {
  private readonly texts = new Map<string, string>();

  constructor(private readonly version: string) {}

  text(baseUrl: string): string {
    let text = this.texts.get(baseUrl);
    if (text === undefined) {
      text = JSON.stringify(buildOpenApi(ROUTES, { serverUrl: baseUrl, version: this.version }));
      if (this.texts.size < MOST_KEPT) this.texts.set(baseUrl, text);
    }
    return text;
  }

  clear(): void {
    this.texts.clear();
  }
}
