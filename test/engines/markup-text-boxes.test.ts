/**
 * Text boxes of a Word document reach pandoc's results (src/engines/markup/text-boxes.ts):
 * pandoc 2.17's docx reader drops a text box whole, so their paragraphs are moved after the
 * paragraph that anchors them before it reads the file. The rewrite itself (a box written twice
 * by Word taken once, a VML box alone, boxes in boxes, in a table cell, nothing to do, a part not
 * well formed), then the engine: a docx whose words are all in text boxes -> md and html
 * keeps them, in order, and the rest of the package is untouched.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createMarkupEngine } from '../../src/engines/markup/markup-engine.ts';
import { docxWithTextBoxesInline, withTextBoxesInline } from '../../src/engines/markup/text-boxes.ts';
import { nextEntry, openZipFile } from '../../src/inputs/zip-entries.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import { docxOf } from '../helpers/hostile-files.ts';
import { W } from '../helpers/hostile-load.ts';

const p = (text: string) => `<w:p><w:r><w:t>${text}</w:t></w:r></w:p>`;
const box = (...paragraphs: string[]) => `<w:txbxContent>${paragraphs.join('')}</w:txbxContent>`;
/** A text box as Word writes it: a drawing, and the same box in VML for older readers. */
const wordBox = (...paragraphs: string[]) => `<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>${box(...paragraphs)}</wps:txbx></wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>${box(...paragraphs)}</v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>`;
const body = (inner: string) => `<w:document ${W} xmlns:mc="m" xmlns:wps="s" xmlns:v="v"><w:body>${inner}</w:body></w:document>`;
/** The paragraphs' texts in document order, outside boxes (as pandoc reads them): boxes taken out innermost first. */
function textsOutsideBoxes(xml: string): string[] {
  const innermost = /<w:txbxContent>(?:(?!<w:txbxContent>)[\s\S])*?<\/w:txbxContent>/g;
  let rest = xml;
  for (let next = rest.replace(innermost, ''); next !== rest; next = rest.replace(innermost, '')) rest = next;
  return [...rest.matchAll(/<w:t>([^<]*)<\/w:t>/g)].map((m) => m[1]!);
}

describe('a docx part with its text boxes inline', () => {
  it('a box Word wrote twice comes after its paragraph once, from the drawing; the box is left empty', async () => {
    const xml = body(`${p('Before')}<w:p><w:r><w:t>Anchor</w:t></w:r>${wordBox(p('Name'), p('Street 1'))}</w:p>${p('After')}`);
    const out = (await withTextBoxesInline(xml))!;
    assert.deepEqual(textsOutsideBoxes(out), ['Before', 'Anchor', 'Name', 'Street 1', 'After']);
    assert.equal((out.match(/Name/g) ?? []).length, 2, 'the copy, and the VML fallback pandoc ignores');
  });

  it('a VML box alone (older files), boxes in boxes, a box in a table cell', async () => {
    const vml = body(`<w:p><w:r><w:pict><v:textbox>${box(p('Old box'))}</v:textbox></w:pict></w:r></w:p>`);
    assert.deepEqual(textsOutsideBoxes((await withTextBoxesInline(vml))!), ['Old box']);
    const nested = body(`<w:p>${wordBox(p('Outer'), `<w:p>${wordBox(p('Inner'))}</w:p>`, p('Outer end'))}</w:p>`);
    assert.deepEqual(textsOutsideBoxes((await withTextBoxesInline(nested))!), ['Outer', 'Inner', 'Outer end']);
    const cell = body(`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Cell</w:t></w:r>${wordBox(p('In cell'))}</w:p></w:tc></w:tr></w:tbl>${p('Below')}`);
    const inCell = (await withTextBoxesInline(cell))!;
    assert.deepEqual(textsOutsideBoxes(inCell), ['Cell', 'In cell', 'Below']);
    assert.ok(inCell.indexOf('In cell') < inCell.indexOf('</w:tc>'), 'still in its cell');
  });

  it('a long part is walked in turns: the event loop runs others\' work meanwhile', async () => {
    const long = body(Array.from({ length: 20_000 }, (_, i) => `<w:p><w:r><w:t>P${i}</w:t></w:r>${i % 10 === 0 ? wordBox(p(`Box ${i}`)) : ''}</w:p>`).join(''));
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const out = await withTextBoxesInline(long);
    ticking = false;
    assert.ok(out?.includes('Box 19990'));
    assert.ok(turns >= 5, `${turns} turns of the loop during the walk`);
  });

  it('nothing to do, or a part not well formed: null (pandoc reads the file as it is)', async () => {
    assert.equal(await withTextBoxesInline(body(`${p('Plain')}<w:p/>`)), null);
    assert.equal(await withTextBoxesInline(body(`<w:p>${box(p('x'))}</w:p></w:p></w:txbxContent>`)), null);
    assert.equal(await withTextBoxesInline(body(`<w:p><w:r><w:t>x</w:t></w:r>${box('')}</w:p>`)), null, 'an empty box');
  });
});

describe('the markup engine and text boxes', () => {
  let dir: string;
  let engine: Engine;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-text-boxes-'));
    engine = createMarkupEngine();
    assert.equal((await engine.probe()).available, true, 'pandoc is needed (CI installs it)');
  });
  after(async () => {
    await engine.close?.();
    await rm(dir, { recursive: true, force: true });
  });

  const convert = async (target: string, data: Buffer): Promise<string> => {
    const inputPath = join(dir, `card-${target}.docx`);
    await writeFile(inputPath, data);
    const job: EngineJob = {
      source: 'docx', target, variant: null, inputPath, outputPath: join(dir, `card.${target}`),
      options: {}, signal: new AbortController().signal, onProgress: () => undefined,
    };
    await engine.convert(job);
    return readFile(job.outputPath, 'utf8');
  };

  it('a card whose words are all in text boxes -> md and html: the words, in order', async () => {
    const card = docxOf(body(`<w:p>${wordBox(p('Joe Bloggs'), p('42 Main Street'))}</w:p><w:p>${wordBox(p('joe@example.com'))}</w:p>`));
    for (const target of ['md', 'html']) {
      const text = await convert(target, card);
      const at = ['Joe Bloggs', '42 Main Street', 'joe@example.com'].map((words) => text.indexOf(words));
      assert.ok(at.every((index) => index >= 0), `${target}: ${text}`);
      assert.deepEqual([...at].sort((a, b) => a - b), at, `${target}: in order`);
      assert.equal(text.split('Joe Bloggs').length, 2, `${target}: once`);
    }
  });

  it('the package is copied whole but for its document part; a file without boxes, not a zip, or with a part that cannot be unpacked is not copied at all', async () => {
    const files = join(dir, 'package');
    const withBox = join(dir, 'with-box.docx');
    await writeFile(withBox, docxOf(body(`<w:p>${wordBox(p('Boxed'))}</w:p>`), ['https://example.com/a.png']));
    const signal = new AbortController().signal;
    assert.equal(await docxWithTextBoxesInline(withBox, `${files}-1.docx`, signal), true);
    const names = async (path: string) => {
      const zip = await openZipFile(path, { lazyEntries: true, autoClose: false });
      const found: string[] = [];
      for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) found.push(entry.fileName);
      zip.close();
      return found.sort();
    };
    assert.deepEqual(await names(`${files}-1.docx`), await names(withBox));
    const plain = join(dir, 'plain.docx');
    await writeFile(plain, docxOf(body(p('Plain'))));
    assert.equal(await docxWithTextBoxesInline(plain, `${files}-2.docx`, signal), false);
    await assert.rejects(readFile(`${files}-2.docx`));
    await writeFile(join(dir, 'not-a-zip.docx'), 'not a zip');
    assert.equal(await docxWithTextBoxesInline(join(dir, 'not-a-zip.docx'), `${files}-3.docx`, signal), false);
    // A part that cannot be unpacked (stored bytes marked as deflated): the copy stops, leaves
    // nothing, and pandoc gets the file as it is.
    const broken = docxOf(body(`<w:p>${wordBox(p('Boxed'))}</w:p>`));
    for (const [signature, at] of [[0x04034b50, 8], [0x02014b50, 10]] as const) {
      const header = broken.indexOf(Buffer.from(new Uint32Array([signature]).buffer));
      broken.writeUInt16LE(8, header + at);
    }
    await writeFile(join(dir, 'broken.docx'), broken);
    assert.equal(await docxWithTextBoxesInline(join(dir, 'broken.docx'), `${files}-4.docx`, signal), false);
    await assert.rejects(readFile(`${files}-4.docx`));
  });
});
