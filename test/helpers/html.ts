/**
 * Pages for the HTML engine, written by hand: a zip of a page with its stylesheet, script and
 * picture (loaded by relative path), and a print-CSS document of known pages.
 */
import { OFFICE_MARKER } from './office.ts';
import { storedZipOf } from './hostile-files.ts';

/** A 2x2 red PNG, as bytes (libvips wrote it once; the HTML engine never decodes it itself). */
export const RED_PIXELS = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000000970485973000003e8000003e801b57b526b0000001349444154089963f8cfc0f09f018cff333000001fee03fda92fc0e20000000049454e44ae426082',
  'hex',
);

/** index.html in a folder, with what it loads beside it: a page that shows the marker only if its script ran. */
export function htmlSiteZip(): Buffer {
  return storedZipOf([
    ['site/index.html', `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="css/style.css"><title>Site</title></head>
<body><h1 id="title">Site fixture</h1><img src="img/red.png" width="40" height="40"><p id="marker"></p><script src="js/app.js"></script></body></html>`],
    ['site/css/style.css', 'body { font-family: sans-serif; background: #f0f0f0; } h1 { color: #204080; }'],
    ['site/js/app.js', `document.getElementById('marker').textContent = '${OFFICE_MARKER}';`],
    ['site/img/red.png', RED_PIXELS],
  ]);
}

/** Three A5 pages (print CSS breaks), each naming its number. */
export const PRINT_CSS_PAGES = 3;
export function printCssDocument(): string {
  const pages = Array.from({ length: PRINT_CSS_PAGES }, (_, i) => `<section><h1>Chapter ${i + 1}</h1><p>${OFFICE_MARKER}</p></section>`).join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><style>
@page { size: A5; margin: 20mm; }
section { break-after: page; }
section:last-child { break-after: auto; }
</style></head><body>${pages}</body></html>`;
}
