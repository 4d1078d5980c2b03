import type { ConversionWarning } from '../../model/conversion.ts';
import { leftOutWarning, MAX_LEFT_OUT_WARNINGS, type LeftOutWarning } from '../left-out.ts';

/**
 * What a page asked for and did not get, told in the result's warnings: an image, a stylesheet,
 * a font or a video that is not among the files sent, or on the web where this conversion does
 * not fetch, or could not be fetched. The page is drawn without it, as a browser would draw it;
 * the user hears why the result lacks its pictures or styles rather than finding out later.
 * Scripts and requests a script makes are not told: analytics and the like fail on every page
 * here, and what they would have changed shows in the result itself.
 */

/** The kinds of request whose absence shows on the page, as Playwright names them, and as the message does. */
const SHOWN: Readonly<Record<string, string>> = { image: 'an image', stylesheet: 'a stylesheet', font: 'a font', media: 'a video or sound' };

/** Why a request was not answered with what it asked for. */
export type LeftOutWhy = 'not-sent' | 'not-fetched' | 'fetch-failed';

/** What the conversion could have done to have what its page misses. */
export interface LeftOutRemedies {
  remoteOption: boolean;
  zipOption: boolean;
}

export class LeftOutRequests {
  /** A page's misses of one conversion: each address once, the first MAX_LEFT_OUT_WARNINGS. */
  private readonly seen = new Map<string, LeftOutWarning>();

  /**
   * `origin` is the site's own (its files are named by path, as the page names them relative to
   * its entry at the root); `remoteOption`, whether the conversion could have asked for the web to
   * be fetched; `zipOption`, whether its files could have come with it as a zip (a web page's can;
   * an SVG's, or a Markdown file's drawn as a page on its way to a PDF, cannot).
   */
  constructor(private readonly origin: string, private readonly options: LeftOutRemedies) {}

  note(url: string, resourceType: string, why: LeftOutWhy): void {
    const kind = SHOWN[resourceType];
    if (!kind || this.seen.size >= MAX_LEFT_OUT_WARNINGS) return;
    const reference = url.startsWith(`${this.origin}/`) ? safeDecode(url.slice(this.origin.length + 1)) : url;
    if (this.seen.has(reference)) return;
    this.seen.set(reference, leftOutWarning(reference, (shown) => `${this.options.zipOption ? 'The page loads' : 'The document shows'} "${shown}" (${kind}), ${this.because(why)}`));
  }

  warnings(): ConversionWarning[] {
    return [...this.seen.values()];
  }

  private because(why: LeftOutWhy): string {
    if (why === 'not-sent') return `which is not among the files sent: it is left out${this.options.zipOption ? ' (send the page and its files as one zip)' : ''}.`;
    if (why === 'fetch-failed') return 'which could not be fetched: it is left out.';
    return this.options.remoteOption
      ? 'which this conversion does not fetch from the web: it is left out (allow_remote_resources=true fetches it).'
      : 'which is not fetched from the web here: it is left out.';
  }
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
