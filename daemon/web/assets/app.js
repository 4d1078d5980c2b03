
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
  const merge = document.getElementById('merge');
  const mergeRow = document.getElementById('merge-row');
  let details = null;
  const show = (message) => { problem.textContent = message || ''; problem.hidden = !message; };
  const extension = (name) => { const at = name.lastIndexOf('.'); return at > 0 ? name.slice(at + 1).toLowerCase() : ''; };
  // Several files may be merged into one PDF: then the choice is pdf -> pdf's, whatever their kinds.
  const merging = () => files.files.length > 1 && merge.checked;
  const sourceOf = () => {
    mergeRow.hidden = files.files.length < 2;
    if (merging()) return 'pdf';
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
      } else if (option.type === 'range' && option.default !== null) {
        const output = element('output', { for: id, id: id + '-value' }, String(option.default ?? option.min));
        row.append(element('label', { for: id }, option.label + ' '), output);
        const slider = element('input', { type: 'range', id, name: option.name, min: option.min, max: option.max, value: option.default ?? option.min });
        // Sent only once moved: the server applies the default itself, and a slider left alone
        // must not send a value the user did not choose (page=1 beside pages is refused).
        slider.addEventListener('input', () => { output.textContent = slider.value; slider.setAttribute('data-moved', ''); });
        row.append(slider);
      } else if (option.file) {
        // An image sent beside the input (a watermark): the option names the file chosen here.
        row.append(element('label', { for: id }, option.label));
        row.append(element('input', { type: 'file', id, name: option.name, accept: 'image/png,image/jpeg,image/webp,image/gif,image/tiff', 'data-kind': 'file' }));
      } else {
        row.append(element('label', { for: id }, option.label));
        // A range without a default (a split's page count) is a number field left empty: a
        // slider always has a value, and would send one nobody chose.
        const numeric = option.type === 'number' || option.type === 'range';
        row.append(element('input', { type: numeric ? 'number' : 'text', id, name: option.name, min: option.min, max: option.max, step: option.type === 'range' ? 1 : numeric ? 'any' : undefined, pattern: option.pattern, value: option.default ?? '' }));
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
    details = merging() ? { ...body, data: body.data.filter((entry) => entry.target === 'pdf') } : body;
    for (const entry of details.data) target.append(element('option', { value: entry.target }, entry.target));
    target.disabled = details.data.length === 0;
    renderOptions();
  };
  files.addEventListener('change', () => { url.value = ''; loadTargets(); });
  merge.addEventListener('change', loadTargets);
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
      if (input.type === 'range' && !input.hasAttribute('data-moved')) continue;
      if (input.getAttribute('data-kind') === 'bool') sent.set(input.name, input.checked ? 'true' : 'false');
      else if (input.getAttribute('data-kind') === 'file') { if (input.files.length > 0) sent.set(input.name, input.files[0].name); }
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
  // `chosen`: one file, several to merge (in the order chosen), or none for the address.
  const send = (chosen) => new Promise((resolve) => {
    const item = element('li');
    const name = chosen.length === 0 ? url.value : chosen.length === 1 ? chosen[0].name : say('mergedFiles', { n: chosen.length });
    item.append(element('span', { class: 'name' }, name), ' ', element('span', { class: 'state' }, say('waiting')));
    jobs.append(item);
    const sent = formFields();
    if (chosen.length === 0) sent.set('url', url.value);
    for (const file of chosen) sent.append('file', file);
    // The files options name go after the input's, each under its own name.
    for (const input of fields.querySelectorAll('input[data-kind="file"]')) if (input.files.length > 0) sent.append('file', input.files[0]);
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
    if (merging()) await send([...files.files]);
    else if (files.files.length > 0) for (const file of [...files.files]) await send([file]);
    else await send([]);
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
