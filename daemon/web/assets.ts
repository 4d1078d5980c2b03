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
input.drop { padding: 2rem 1rem; border: 2px dashed var(--muted); border-radius: 6px; background: var(--panel); width: 100%; }
input[type=url], input[type=number] { width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--muted); border-radius: 4px; }
input[type=range] { width: 100%; }
form.wide { max-width: 40rem; }
ul.jobs { padding-left: 1.2rem; }
ul.jobs li.failed .state { color: var(--danger); }
figure.chart { margin: .5rem 0 1rem; }
figure.chart svg { width: 100%; height: auto; background: var(--bg); border: 1px solid var(--line); }
figure.chart .bar { fill: var(--ink); }
figure.chart .axis { stroke: var(--muted); }
figure.chart .label { font-size: 12px; fill: var(--ink); }
figure.chart .label.end { text-anchor: end; }
figure.chart figcaption { color: var(--muted); }
form.inline-form { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; margin-bottom: .5rem; }
form.inline-form label { font-weight: 400; }
form.inline-form input[type=number] { width: 7rem; font: inherit; padding: .3rem; }
ol.attempts { margin: 0; padding-left: 1.2rem; }
h3 { font-size: 1.1rem; margin: 1.25rem 0 .5rem; }
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
 * The convert page (convert-page.ts says what it does), copy buttons (`data-copy` names the
 * element whose text they copy), and the conversions page's
 * live rows (`data-live`: the ids to ask /web/api/conversions about every two seconds; a row that
 * ended reloads the page, whose actions then change). Nothing else runs in the pages.
 */
const SCRIPT = String.raw`
// The path the pages are served under ('' at the host's root): every address below starts with it.
const base = document.body.getAttribute('data-base') || '';
const convertForm = document.getElementById('convert');
if (convertForm) {
  const texts = JSON.parse(convertForm.getAttribute('data-texts'));
  const say = (key, params) => texts[key].replace(/\{(\w+)\}/g, (_, name) => String(params && name in params ? params[name] : ''));
  const csrf = convertForm.getAttribute('data-csrf');
  const files = document.getElementById('files');
  const url = document.getElementById('url');
  const target = document.getElementById('target');
  const optionsBox = document.getElementById('options');
  const fields = document.getElementById('option-fields');
  const problem = document.getElementById('convert-problem');
  const jobs = document.getElementById('jobs');
  let details = null;
  const show = (message) => { problem.textContent = message || ''; problem.hidden = !message; };
  const extension = (name) => { const at = name.lastIndexOf('.'); return at > 0 ? name.slice(at + 1).toLowerCase() : ''; };
  const sourceOf = () => {
    if (files.files.length > 0) {
      const kinds = [...new Set([...files.files].map((file) => extension(file.name)))];
      if (kinds.length > 1) { show(say('oneKind', { kinds: kinds.join(', ') })); return null; }
      return kinds[0];
    }
    try { return extension(new URL(url.value).pathname.split('/').pop() || ''); } catch { return null; }
  };
  const element = (tag, attributes, text) => {
    const made = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) if (value !== undefined && value !== null && value !== false) made.setAttribute(name, value === true ? '' : String(value));
    if (text !== undefined) made.textContent = text;
    return made;
  };
  const renderOptions = () => {
    fields.replaceChildren();
    const pair = details && details.data.find((entry) => entry.target === target.value);
    if (!pair) { optionsBox.hidden = true; return; }
    optionsBox.hidden = false;
    if (pair.options.length === 0 && pair.variants.length === 0) fields.append(element('p', {}, say('noOptions')));
    if (pair.variants.length > 0) {
      const row = element('div');
      row.append(element('label', { for: 'opt-variant' }, 'variant'));
      const select = element('select', { id: 'opt-variant', name: 'variant' });
      select.append(element('option', { value: '' }, '-'));
      for (const variant of pair.variants) select.append(element('option', { value: variant.key }, variant.label));
      row.append(select);
      fields.append(row);
    }
    for (const option of pair.options) {
      if (option.secret) continue;
      const id = 'opt-' + option.name;
      const row = element('div');
      if (option.type === 'bool') {
        const label = element('label', { for: id });
        label.append(element('input', { type: 'checkbox', id, name: option.name, checked: option.default === true, 'data-kind': 'bool' }), ' ' + option.label);
        row.append(label);
      } else if (option.type === 'enum') {
        row.append(element('label', { for: id }, option.label));
        const select = element('select', { id, name: option.name });
        if (option.default === null) select.append(element('option', { value: '' }, '-'));
        for (const value of option.values) select.append(element('option', { value, selected: value === option.default }, value));
        row.append(select);
      } else if (option.type === 'range') {
        const output = element('output', { for: id, id: id + '-value' }, String(option.default ?? option.min));
        row.append(element('label', { for: id }, option.label + ' '), output);
        const slider = element('input', { type: 'range', id, name: option.name, min: option.min, max: option.max, value: option.default ?? option.min });
        slider.addEventListener('input', () => { output.textContent = slider.value; });
        row.append(slider);
      } else {
        row.append(element('label', { for: id }, option.label));
        row.append(element('input', { type: option.type === 'number' ? 'number' : 'text', id, name: option.name, min: option.min, max: option.max, pattern: option.pattern, value: option.default ?? '' }));
      }
      fields.append(row);
    }
  };
  const loadTargets = async () => {
    show('');
    details = null;
    target.replaceChildren();
    target.disabled = true;
    renderOptions();
    const source = sourceOf();
    if (!source) return;
    const answer = await fetch(base + '/web/api/formats/' + encodeURIComponent(source));
    const body = await answer.json();
    // A kind convd does not know is named as the file has it, not as the API's identifier.
    if (answer.status === 404) { show(say('unknownKind', { kind: source })); return; }
    if (!answer.ok) { show(body.error ? body.error.message : say('unknownKind', { kind: source })); return; }
    details = body;
    for (const entry of body.data) target.append(element('option', { value: entry.target }, entry.target));
    target.disabled = body.data.length === 0;
    renderOptions();
  };
  files.addEventListener('change', () => { url.value = ''; loadTargets(); });
  // Files dropped anywhere on the field: taken as chosen (browsers differ in what a drop on a file field does).
  files.addEventListener('dragover', (event) => event.preventDefault());
  files.addEventListener('drop', (event) => {
    if (!event.dataTransfer || event.dataTransfer.files.length === 0) return;
    event.preventDefault();
    files.files = event.dataTransfer.files;
    files.dispatchEvent(new Event('change'));
  });
  url.addEventListener('change', () => { if (url.value) { files.value = ''; loadTargets(); } });
  target.addEventListener('change', renderOptions);
  const formFields = () => {
    const sent = new FormData();
    sent.set('target', target.value);
    for (const input of fields.querySelectorAll('input, select')) {
      if (input.getAttribute('data-kind') === 'bool') sent.set(input.name, input.checked ? 'true' : 'false');
      else if (input.value !== '') sent.set(input.name, input.value);
    }
    return sent;
  };
  const follow = (item, id) => {
    const look = async () => {
      const answer = await fetch(base + '/web/api/conversions?ids=' + id).catch(() => null);
      if (!answer || !answer.ok) { setTimeout(look, 1000); return; }
      const { data } = await answer.json();
      const row = data[0];
      if (!row) return;
      const state = item.querySelector('.state');
      if (row.active) {
        state.textContent = row.label + (row.progress !== null ? ' ' + row.progress + ' %' : '');
        setTimeout(look, 1000);
        return;
      }
      state.textContent = row.label;
      if (row.status === 'succeeded') item.append(' ', element('a', { href: base + '/conversions/' + id + '/download' }, say('download')));
    };
    look();
  };
  const send = (file) => new Promise((resolve) => {
    const item = element('li');
    item.append(element('span', { class: 'name' }, file ? file.name : url.value), ' ', element('span', { class: 'state' }, say('waiting')));
    jobs.append(item);
    const sent = formFields();
    if (file) sent.set('file', file); else sent.set('url', url.value);
    const request = new XMLHttpRequest();
    request.open('POST', base + '/web/api/conversions');
    request.setRequestHeader('x-csrf-token', csrf);
    request.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) item.querySelector('.state').textContent = say('uploading', { n: Math.round(event.loaded / event.total * 100) });
    });
    request.addEventListener('load', () => {
      let body = null;
      try { body = JSON.parse(request.responseText); } catch { body = null; }
      if (request.status >= 400 || !body || body.error) {
        item.querySelector('.state').textContent = body && body.error ? body.error.message : String(request.status);
        item.classList.add('failed');
      } else {
        item.id = 'job-' + body.id;
        follow(item, body.id);
      }
      resolve();
    });
    request.addEventListener('error', () => { item.querySelector('.state').textContent = String(request.status || 'network'); resolve(); });
    request.send(sent);
  });
  convertForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    show('');
    if (!target.value || (files.files.length === 0 && !url.value)) { show(say('chooseFirst')); return; }
    if (files.files.length > 0) for (const file of [...files.files]) await send(file);
    else await send(null);
  });
}
const live = document.querySelector('table[data-live]');
if (live) {
  const ids = live.getAttribute('data-live');
  // A form being sent (cancel, delete) must not be overtaken by a reload of this page.
  let leaving = false;
  document.addEventListener('submit', () => { leaving = true; });
  const poll = async () => {
    if (leaving) return;
    try {
      const answer = await fetch(base + '/web/api/conversions?ids=' + encodeURIComponent(ids), { headers: { accept: 'application/json' } });
      // A refused look (busy, restarting) is followed by the next one, not the end of the updates.
      const { data } = answer.ok ? await answer.json() : { data: [] };
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
