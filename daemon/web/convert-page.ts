import { html } from './html.ts';
import { layout, type PageContext } from './pages.ts';
import type { TextKey } from './text.ts';

/** The words the page's script shows (it has no text of its own), in the page's language. */
const SCRIPT_TEXTS: readonly TextKey[] = ['chooseFirst', 'oneKind', 'mergedFiles', 'unknownKind', 'uploading', 'waiting', 'noOptions', 'download', 'status_queued', 'status_fetching', 'status_processing', 'status_succeeded', 'status_failed', 'status_cancelled', 'status_expired'];

/**
 * The convert page: files dropped on (or chosen with) the file field, or a URL; the
 * targets and each target's options come from the formats listing for the files' kind
 * (/web/api/formats/<source>) and the form is built from the option descriptors (range: a slider
 * with its value shown, or an empty number field where it has no default; enum: a list; bool: a
 * checkbox; number: a number field); each file is sent
 * on its own with its upload's progress, then its conversion's, then a download link. Several
 * files may instead be merged into one PDF (files of different kinds can only be): one request
 * with every file in the order chosen, with pdf -> pdf's options. The script
 * (assets/app.js) does all of that; without it the page says nothing can be done.
 */
export function convertPage(context: PageContext): string {
  const { t, session } = context;
  // Their placeholders ({n}, {kinds}, {kind}) stay in: the script fills them in.
  const texts = Object.fromEntries(SCRIPT_TEXTS.map((key) => [key, t(key)]));
  return layout(context, t('convert'), html`<h1>${t('convert')}</h1>
<p>${t('convertIntro')}</p>
<form id="convert" class="stack wide" data-csrf="${session!.csrf}" data-texts="${JSON.stringify(texts)}">
<div><label for="files">${t('files')}</label><input id="files" name="files" type="file" multiple class="drop"></div>
<div id="merge-row" hidden><label><input id="merge" type="checkbox"> ${t('mergeIntoPdf')}</label></div>
<div><label for="url">${t('orUrl')}</label><input id="url" name="url" type="url" inputmode="url" placeholder="https://"></div>
<div><label for="target">${t('target')}</label><select id="target" name="target" disabled></select></div>
<fieldset id="options" hidden><legend>${t('options')}</legend><div id="option-fields"></div></fieldset>
<p id="convert-problem" class="error" role="alert" hidden></p>
<div><button type="submit">${t('start')}</button></div>
</form>
<ul id="jobs" class="jobs" aria-live="polite"></ul>`);
}
