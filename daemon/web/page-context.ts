import type { Language } from '../../src/errors/messages.ts';
import type { Translate } from './text.ts';

/** What every page is rendered with: the language, the base path and the session, if any. */
export interface PageContext {
  language: Language;
  t: Translate;
  /** The path of the page (for the language switch), with the base. */
  path: string;
  /**
   * The path the pages are served under, from public_url's path ('' at the host's root; '/convd'
   * behind a proxy that serves convd there): every link, form and fetch of the pages starts with it.
   */
  base: string;
  /** Signed in: the session's form token and the account's name; null on the sign-in pages. */
  session: { csrf: string; accountName: string; admin: boolean } | null;
}
