import { createHash } from 'node:crypto';

/**
 * The web face's only assets, shipped in the package as code (no CDN, no build step, no file to
 * find at run time): one style sheet, one script. Each is served under a name holding its content
 * hash, cached for a year; a new version is a new name.
 */
const STYLE = `
:root { color-scheme: light; --ink: #1b1f24; --muted: #4a5561; --line: #c9d1d9; --accent: #0b57d0; --danger: #b3261e; --ok: #146c2e; --bg: #ffffff; --panel: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem; }
.skip:focus { left: .5rem; }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between; padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
select { font: inherit; padding: .4rem; border: 1px solid var(--muted); border-radius: 4px; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
form.filters label { display: inline; }
header.top .brand { font-weight: 700; font-size: 1.2rem; color: var(--ink); text-decoration: none; }
nav.top { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 1.5rem 0 .5rem; }
section.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin: 1rem 0; }
form.stack { display: grid; gap: .75rem; max-width: 26rem; }
label { font-weight: 600; display: block; }
input[type=text], input[type=password] { width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--muted); border-radius: 4px; }
button { font: inherit; padding: .45rem .9rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: var(--bg); color: var(--accent); }
button.danger { background: var(--bg); color: var(--danger); border-color: var(--danger); }
.inline { display: inline; }
fieldset { border: 1px solid var(--line); border-radius: 4px; padding: .5rem .75rem; }
fieldset label { font-weight: 400; display: flex; gap: .5rem; align-items: baseline; }
.notice { border-left: 4px solid var(--ok); padding: .5rem .75rem; background: #e9f5ec; }
.error { border-left: 4px solid var(--danger); padding: .5rem .75rem; background: #fcecea; }
dl.facts { display: grid; grid-template-columns: minmax(10rem, max-content) 1fr; gap: .25rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code.secret { display: block; word-break: break-all; padding: .5rem; background: var(--bg); border: 1px solid var(--line); border-radius: 4px; }
@media (max-width: 30rem) { dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: .5rem; } }
`;

/**
 * Copy buttons (`data-copy` names the element whose text they copy), and the conversions page's
 * live rows (`data-live`: the ids to ask /web/api/conversions about every two seconds; a row that
 * ended reloads the page, whose actions then change). Nothing else runs in the pages.
 */
const SCRIPT = `
const live = document.querySelector('table[data-live]');
if (live) {
  const ids = live.getAttribute('data-live');
  // A form being sent (cancel, delete) must not be overtaken by a reload of this page.
  let leaving = false;
  document.addEventListener('submit', () => { leaving = true; });
  const poll = async () => {
    if (leaving) return;
    try {
      const answer = await fetch('/web/api/conversions?ids=' + encodeURIComponent(ids), { headers: { accept: 'application/json' } });
      if (!answer.ok) return;
      const { data } = await answer.json();
      for (const row of data) {
        if (leaving) return;
        if (!row.active) return location.reload();
        const cells = document.getElementById('row-' + row.id);
        if (!cells) continue;
        cells.querySelector('[data-status]').textContent = row.label;
        const bar = cells.querySelector('progress');
        if (bar && row.progress !== null) {
          bar.value = row.progress;
          bar.textContent = row.progress + ' %';
          bar.nextElementSibling.textContent = row.progress + ' %';
        }
      }
    } catch {
      // The next look tries again.
    }
    setTimeout(poll, 2000);
  };
  setTimeout(poll, 2000);
}
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = button.getAttribute('data-copied') || button.textContent;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
});
`;

export interface Asset {
  path: string;
  type: string;
  body: string;
}

function asset(name: string, extension: string, type: string, body: string): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { path: `/web/assets/${name}.${hash}.${extension}`, type, body };
}

export const ASSETS = {
  style: asset('style', 'css', 'text/css; charset=utf-8', STYLE),
  script: asset('app', 'js', 'text/javascript; charset=utf-8', SCRIPT),
} as const;
