import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The web face's only assets, files beside this module in assets/ (no CDN, no bundler): the style
 * sheet, and the pages' script. The script runs the convert page (convert-page.ts says what it
 * does), copy buttons (`data-copy` names the element whose text they copy), and the conversions
 * page's live rows (`data-live`: the ids to ask /web/api/conversions about every two seconds; a
 * row that ended reloads the page, whose actions then change). Nothing else runs in the pages.
 *
 * Each is read once, when the daemon loads, and served under a name holding its content hash,
 * cached for a year; a new version is a new name. The build copies the files into dist/.
 */
export interface Asset {
  path: string;
  type: string;
  body: string;
}

/** Where the files are, in the source tree and in dist/ alike. */
export const ASSET_FILES = {
  style: new URL('./assets/style.css', import.meta.url),
  script: new URL('./assets/app.js', import.meta.url),
} as const;

function asset(name: string, extension: string, type: string, file: URL): Asset {
  const body = readFileSync(file, 'utf8');
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { path: `/web/assets/${name}.${hash}.${extension}`, type, body };
}

export const ASSETS = {
  style: asset('style', 'css', 'text/css; charset=utf-8', ASSET_FILES.style),
  script: asset('app', 'js', 'text/javascript; charset=utf-8', ASSET_FILES.script),
} as const;
