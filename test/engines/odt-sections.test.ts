/**
 * An odt's sections reach pandoc's formats: text inside `text:section` (an agenda's items, an
 * index, multi-column text, as LibreOffice's own templates hold) is in the html, md, epub and rst
 * results. pandoc's ODT reader drops it, so those targets go through LibreOffice's docx.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CHAIN_ENGINE } from '../../src/engines/chain.ts';
import { createMarkupEngine } from '../../src/engines/markup/markup-engine.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import { documentText } from '../helpers/document-text.ts';
import { storedZipOf } from '../helpers/hostile-files.ts';

const office = await findOffice(process.env);
const required = process.env.CI === 'true';
const skip = office.ready || required ? false : `LibreOffice is not installed here: ${office.problem}`;

const NS = [
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"',
  'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"',
  'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"',
].join(' ');

/** An odt written by hand: a paragraph, then a section of two columns' worth of agenda items. */
function odtWithSection(): Buffer {
  const content = `<?xml version="1.0" encoding="UTF-8"?>
<office:document-content ${NS} office:version="1.2"><office:body><office:text>
<text:p>Before the section: welcome.</text:p>
<text:section text:name="AgendaItems">
<text:h text:outline-level="1">Quarterly planning</text:h>
<text:p>Budget walkthrough by Theodora.</text:p>
<text:p>Hiring freeze questions.</text:p>
</text:section>
<text:p>After the section: adjourned.</text:p>
</office:text></office:body></office:document-content>`;
  const styles = `<?xml version="1.0" encoding="UTF-8"?><office:document-styles ${NS} office:version="1.2"><office:styles/></office:document-styles>`;
  const manifest = `<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>
</manifest:manifest>`;
  return storedZipOf([
    ['mimetype', 'application/vnd.oasis.opendocument.text'],
    ['META-INF/manifest.xml', manifest],
    ['content.xml', content],
    ['styles.xml', styles],
  ]);
}

const WORDS = ['welcome', 'Quarterly planning', 'Theodora', 'Hiring freeze', 'adjourned'];

describe('an odt\'s sections in pandoc\'s formats', { skip }, () => {
  let registry: FormatRegistry;
  let dir: string;
  let input: string;

  before(async () => {
    if (!office.ready) assert.fail(`CI=true: the document suites must not skip, but ${office.problem}`);
    registry = await FormatRegistry.create([createOfficeEngine({ instances: 1 }), createMarkupEngine()]);
    dir = await mkdtemp(join(tmpdir(), 'convd-odt-sections-'));
    input = join(dir, 'agenda.odt');
    await writeFile(input, odtWithSection());
  });

  after(async () => {
    await registry?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const target of ['html', 'md', 'epub', 'rst']) {
    it(`odt -> ${target}: the section's text kept, through LibreOffice's docx`, async () => {
      const pair = registry.pair('odt', target)!;
      const options = validateOptions(pair, {});
      assert.ok(options.ok);
      const outputPath = join(dir, `agenda.${target}`);
      await registry.engine(pair.engine)!.convert({
        inputPath: input, outputPath, source: 'odt', target, variant: null, options: options.options,
        signal: new AbortController().signal, onProgress: () => undefined,
      });
      const text = (await documentText(target, outputPath)).replace(/\s+/g, ' ');
      for (const words of WORDS) assert.ok(text.includes(words), `${target} holds "${words}": ${text.slice(0, 300)}`);
      assert.equal(pair.engine, CHAIN_ENGINE);
      assert.deepEqual(pair.steps!.map((step) => `${step.engine}:${step.source}->${step.target}`), ['office:odt->docx', `markup:docx->${target}`]);
    });
  }
});
