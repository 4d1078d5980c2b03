/**
 * Fonts documents were written in, and every script. Through the daemon: a docx set in Word's
 * fonts comes out in their metric-compatible stand-ins (read with poppler's `pdffonts`); Chinese,
 * Japanese, Korean, Arabic and Hebrew in docx, html, Markdown and plain text come out as glyphs
 * (text layer read back, and each script's page rendered by poppler: a page of boxes would look
 * like the page of characters no font has, or like another script's boxes); an emoji comes out
 * in colour. Plain text the PDF engine's font lacks goes to Chromium; a character no installed
 * font has is refused by name. Font warnings name the fonts of the user's document only, never
 * those of the docx pandoc writes of reStructuredText or Org on the way to a PDF.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { findChromium } from '../../src/engines/html/find-chromium.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { api, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { docxOf } from '../helpers/hostile-files.ts';

const run = promisify(execFile);
const required = process.env.CI === 'true';
const [office, chromium, poppler] = await Promise.all([
  findOffice(process.env),
  findChromium(process.env),
  run('pdffonts', ['-v']).then(() => true, () => false),
]);
const skip = required || (office.ready && chromium.ready && poppler) ? false : 'LibreOffice, Chromium and poppler-utils are needed here';

/** Four characters of each script: a script drawn as empty boxes looks like another's boxes. */
const SCRIPTS: [string, string][] = [
  ['Chinese', '汉字中文'],
  ['Japanese', 'ひらがな'],
  ['Korean', '한국어글'],
  ['Arabic', 'عربية'],
  ['Hebrew', 'עברית'],
];
/** Kawi letters (Unicode 15): no font of Debian 12 has them, so they print as the boxes of a missing glyph. */
const NO_FONT = '\u{11F04}\u{11F05}\u{11F06}\u{11F07}';
const EMOJI = '😀🎉';
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

let daemon: DaemonHandle;
let dir: string;

interface Submitted {
  id: string;
  status: string;
  error?: { code: string; message: string };
  warnings: { code: string; font: string; used: string; message: string }[];
}

/** The conversion as the API shows it once it has ended. */
async function submit(content: Buffer | string, name: string, target: string): Promise<Submitted> {
  const form = new FormData();
  form.append('target', target);
  form.append('wait', '30');
  form.append('file', new Blob([typeof content === 'string' ? Buffer.from(content) : content]), name);
  const created = await api(daemon, '/conversions', { method: 'POST', body: form });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  let conversion = created.body as Submitted;
  for (let tries = 0; tries < 6 && (conversion.status === 'queued' || conversion.status === 'processing'); tries++) {
    conversion = (await api(daemon, `/conversions/${conversion.id}?wait=30`)).body as typeof conversion;
  }
  return conversion;
}

/** The result downloaded into the test's directory, or the conversion's error. */
async function convert(content: Buffer | string, name: string, target: string): Promise<{ path?: string; error?: { code: string; message: string } }> {
  const conversion = await submit(content, name, target);
  if (conversion.status !== 'succeeded') return { error: conversion.error ?? { code: conversion.status, message: '' } };
  const download = await fetch(`${daemon.baseUrl}/conversions/${conversion.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  const path = join(dir, `${conversion.id}.${target}`);
  await writeFile(path, Buffer.from(await download.arrayBuffer()));
  return { path };
}

async function pdfFonts(path: string): Promise<string[]> {
  const { stdout } = await run('pdffonts', [path]);
  return stdout.split('\n').slice(2).map((line) => line.split(/\s+/)[0]!).filter(Boolean).map((name) => name.replace(/^[A-Z]{6}\+/, ''));
}

async function pdfText(path: string): Promise<string> {
  const { stdout } = await run('pdftotext', ['-enc', 'UTF-8', path, '-']);
  // Bidi marks poppler adds around right-to-left runs, and the order it gives them in, are its own.
  return stdout.replace(/[\u200E\u200F\u202A-\u202E]/g, '');
}

/** Each page of a PDF as grey pixels (poppler at 40 dpi). */
async function pages(path: string): Promise<Buffer[]> {
  const prefix = join(dir, `page-${Math.random().toString(36).slice(2)}`);
  await run('pdftoppm', ['-r', '40', '-gray', '-png', path, prefix]);
  const names = (await readdir(dir)).filter((name) => join(dir, name).startsWith(prefix)).sort();
  return Promise.all(names.map((name) => sharp(join(dir, name)).extractChannel(0).raw().toBuffer()));
}

function difference(a: Buffer, b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) sum += Math.abs(a[i]! - b[i]!);
  return sum;
}

function ink(page: Buffer): number {
  return page.reduce((sum, value) => sum + (255 - value), 0);
}

/**
 * Pages 1..n hold one script each and the last page characters no font has: every script's page
 * has ink, differs from that page, and from every other script's.
 */
function assertGlyphs(rendered: Buffer[], what: string): void {
  assert.equal(rendered.length, SCRIPTS.length + 1, `${what}: a page per script and one of boxes`);
  // LibreOffice draws a missing glyph as a box, Chromium as nothing: either way a script's page differs.
  const boxes = rendered.at(-1)!;
  for (const [index, [script]] of SCRIPTS.entries()) {
    const page = rendered[index]!;
    assert.ok(ink(page) > 255 * 5, `${what}: ${script} has ink`);
    assert.ok(difference(page, boxes) > ink(boxes) * 0.2, `${what}: ${script} is drawn as the boxes of missing glyphs`);
    for (let other = 0; other < index; other++) {
      assert.ok(difference(page, rendered[other]!) > 0, `${what}: ${script} looks like ${SCRIPTS[other]![0]}`);
    }
  }
}

function assertText(text: string, what: string): void {
  for (const [script, sample] of SCRIPTS) {
    for (const char of sample) assert.ok(text.includes(char), `${what}: ${script} "${char}" is not in the PDF's text`);
  }
}

/** Pixels of strong colour: an emoji drawn in colour has many, a monochrome outline none. */
async function colourful(image: string | Buffer): Promise<number> {
  const { data, info } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let count = 0;
  for (let i = 0; i < data.length; i += info.channels) {
    const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
    if (Math.max(r, g, b) - Math.min(r, g, b) > 80) count++;
  }
  return count;
}

describe('fonts and scripts', { skip }, () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-fonts-'));
    daemon = await startDaemon();
  });

  after(async () => {
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a docx in Calibri, Cambria, Arial, Times New Roman and Courier New embeds their metric-compatible stand-ins, never DejaVu', async () => {
    const run = (font: string) => `<w:p><w:r><w:rPr><w:rFonts w:ascii="${font}" w:hAnsi="${font}" w:cs="${font}"/></w:rPr><w:t xml:space="preserve">${font}: The quick brown fox jumps over the lazy dog</w:t></w:r></w:p>`;
    const docx = docxOf(`<w:document ${W}><w:body>${['Calibri', 'Cambria', 'Arial', 'Times New Roman', 'Courier New'].map(run).join('')}</w:body></w:document>`);
    const { path, error } = await convert(docx, 'word fonts.docx', 'pdf');
    assert.ok(path, JSON.stringify(error));
    const fonts = await pdfFonts(path);
    const has = (pattern: RegExp, what: string) => assert.ok(fonts.some((font) => pattern.test(font)), `${what}: ${fonts.join(', ')}`);
    has(/^Carlito/, 'Calibri set in Carlito');
    has(/^Caladea/, 'Cambria set in Caladea');
    has(/^(LiberationSans|NimbusSans)/, 'Arial set in Liberation Sans or URW Nimbus Sans');
    has(/^(LiberationSerif|NimbusRoman)/, 'Times New Roman set in Liberation Serif or URW Nimbus Roman');
    has(/^(LiberationMono|NimbusMono)/, 'Courier New set in Liberation Mono or URW Nimbus Mono');
    assert.ok(!fonts.some((font) => /DejaVu/.test(font)), `no DejaVu: ${fonts.join(', ')}`);
  });

  it('a docx naming a font nobody has: the result\'s warnings name it and what was used; fonts with metric-compatible faces warn of nothing', async () => {
    const run = (font: string) => `<w:p><w:r><w:rPr><w:rFonts w:ascii="${font}" w:hAnsi="${font}"/></w:rPr><w:t>Set in ${font}</w:t></w:r></w:p>`;
    const body = (fonts: string[]) => docxOf(`<w:document ${W}><w:body>${fonts.map(run).join('')}</w:body></w:document>`);
    const warned = await submit(body(['Calibri', 'Segoe UI', 'Times New Roman']), 'segoe.docx', 'pdf');
    assert.equal(warned.status, 'succeeded', JSON.stringify(warned.error));
    assert.equal(warned.warnings.length, 1, JSON.stringify(warned.warnings));
    const [warning] = warned.warnings;
    assert.equal(warning!.code, 'font_substituted');
    assert.equal(warning!.font, 'Segoe UI');
    assert.ok(warning!.used && warning!.used !== 'Segoe UI', warning!.used);
    assert.match(warning!.message, /"Segoe UI", which is not installed here: its text is set in ".+"/);
    // Through a chain too: the fonts of the docx matter to the PNG made of its PDF.
    const chained = await submit(body(['Segoe UI']), 'segoe.docx', 'png');
    assert.deepEqual(chained.warnings.map((entry) => entry.font), ['Segoe UI']);
    const clean = await submit(body(['Calibri', 'Cambria', 'Arial', 'Courier New']), 'word.docx', 'pdf');
    assert.deepEqual(clean.warnings, []);
  });

  it('an OpenDocument file: quoted font names read as names; its asian and complex fonts warned of only where it has such text', async () => {
    // As LibreOffice writes them: a family with a space quoted (&apos;), each style naming a font
    // for Latin text, one for Chinese, Japanese and Korean, and one for right-to-left and Indic text.
    const fodt = (text: string) => `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:font-face-decls>
<style:font-face style:name="Liberation Sans" svg:font-family="&apos;Liberation Sans&apos;" style:font-family-generic="swiss"/>
<style:font-face style:name="HG Mincho Light J" svg:font-family="&apos;HG Mincho Light J&apos;"/>
<style:font-face style:name="Lucidasans" svg:font-family="Lucidasans"/>
</office:font-face-decls>
<office:styles><style:style style:name="Standard" style:family="paragraph"><style:text-properties style:font-name="Liberation Sans" style:font-name-asian="HG Mincho Light J" style:font-name-complex="Lucidasans"/></style:style></office:styles>
<office:body><office:text><text:p text:style-name="Standard">${text}</text:p></office:text></office:body></office:document>`;
    const fontsOf = async (text: string) => {
      const done = await submit(fodt(text), 'styles.fodt', 'pdf');
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      return done.warnings.map((warning) => warning.font);
    };
    assert.deepEqual(await fontsOf('Only Latin letters here.'), [], 'an installed font, quoted, is found; the other scripts\' fonts set nothing');
    assert.deepEqual(await fontsOf('Latin, and 日本語の文章.'), ['HG Mincho Light J']);
    assert.deepEqual(await fontsOf('Latin, and עברית.'), ['Lucidasans']);
    // LibreOffice's own letter template names Andale Sans UI and Tahoma for those scripts, and
    // Liberation Mono quoted: it was warned of all three (its PDF sets every letter in installed fonts).
    const template = '/usr/lib/libreoffice/share/template/common/wizard/letter/off-elegant_l.ott';
    const letter = await submit(readFileSync(template), 'off-elegant_l.ott', 'pdf');
    assert.equal(letter.status, 'succeeded', JSON.stringify(letter.error));
    assert.deepEqual(letter.warnings, []);
  });

  it('URW\'s fonts under their older names (Nimbus Roman No9 L...) and StarOffice\'s StarSymbol warn of nothing: the same faces are here under today\'s names', async () => {
    // As docutils' ODT writer's styles.odt names them.
    const faces = ['Nimbus Roman No9 L', 'Nimbus Sans L', 'Nimbus Mono L', 'StarSymbol'];
    const fodt = `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:font-face-decls>${faces.map((face, i) => `<style:font-face style:name="F${i}" svg:font-family="&apos;${face}&apos;"/>`).join('')}</office:font-face-decls>
<office:automatic-styles>${faces.map((_, i) => `<style:style style:name="P${i}" style:family="paragraph"><style:text-properties style:font-name="F${i}"/></style:style>`).join('')}</office:automatic-styles>
<office:body><office:text>${faces.map((face, i) => `<text:p text:style-name="P${i}">Set in ${face} \u2022</text:p>`).join('')}</office:text></office:body></office:document>`;
    const done = await submit(fodt, 'urw.fodt', 'pdf');
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(done.warnings, []);
  });

  it('reStructuredText and Org -> pdf warn of no font: the docx pandoc writes on the way names its own (Consolas for code)', async () => {
    const sources: [string, string][] = [
      ['notes.rst', 'Notes\n=====\n\nRun this:\n\n::\n\n  make install PREFIX=/opt\n'],
      ['notes.org', '* Notes\nRun this:\n#+BEGIN_SRC sh\nmake install PREFIX=/opt\n#+END_SRC\n'],
    ];
    for (const [name, text] of sources) {
      const done = await submit(text, name, 'pdf');
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.deepEqual(done.warnings, [], name);
      const download = await fetch(`${daemon.baseUrl}/conversions/${done.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
      const path = join(dir, `${done.id}.pdf`);
      await writeFile(path, Buffer.from(await download.arrayBuffer()));
      assert.match(await pdfText(path), /make install PREFIX=\/opt/, `${name}: the code block is in the PDF`);
    }
  });

  it('Chinese, Japanese, Korean, Arabic and Hebrew in a docx -> pdf: a font with each script, every character a glyph', async () => {
    const pageBreak = '<w:p><w:r><w:br w:type="page"/></w:r></w:p>';
    const paragraph = (text: string) => `<w:p><w:r><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri" w:eastAsia="SimSun" w:cs="Arial"/><w:sz w:val="48"/></w:rPr><w:t>${text}</w:t></w:r></w:p>`;
    const body = [...SCRIPTS.map(([, sample]) => paragraph(sample)), paragraph(NO_FONT)].join(pageBreak);
    const { path, error } = await convert(docxOf(`<w:document ${W}><w:body>${body}</w:body></w:document>`), 'scripts.docx', 'pdf');
    assert.ok(path, JSON.stringify(error));
    assert.ok((await pdfFonts(path)).some((font) => /CJK/.test(font)), 'a CJK font is embedded');
    assertText(await pdfText(path), 'docx');
    assertGlyphs(await pages(path), 'docx');
  });

  it('an emoji in a docx -> pdf is drawn (in an outline font: LibreOffice\'s colour emoji would print as nothing)', async () => {
    const emoji = `<w:p><w:r><w:rPr><w:sz w:val="96"/></w:rPr><w:t>${EMOJI}</w:t></w:r></w:p>`;
    const { path, error } = await convert(docxOf(`<w:document ${W}><w:body>${emoji}</w:body></w:document>`), 'emoji.docx', 'pdf');
    assert.ok(path, JSON.stringify(error));
    const fonts = await pdfFonts(path);
    assert.ok(!fonts.some((font) => /ColorEmoji/.test(font)), `no colour bitmap font LibreOffice cannot show: ${fonts.join(', ')}`);
    const [page] = await pages(path);
    assert.ok(ink(page!) > 255 * 50, 'the emoji has ink');
  });

  it('the same in HTML -> pdf, and an emoji in colour in HTML -> png and -> pdf', async () => {
    const section = (text: string) => `<p style="font-size:28pt;break-after:page">${text}</p>`;
    const html = `<!doctype html><meta charset="utf-8"><body>${[...SCRIPTS.map(([, sample]) => section(sample)), `<p style="font-size:28pt">${NO_FONT}</p>`].join('')}</body>`;
    const { path, error } = await convert(html, 'scripts.html', 'pdf');
    assert.ok(path, JSON.stringify(error));
    assertText(await pdfText(path), 'html');
    assertGlyphs(await pages(path), 'html');

    const emoji = `<!doctype html><meta charset="utf-8"><body style="margin:0"><p style="font-size:48px;margin:0">${EMOJI}</p></body>`;
    const png = await convert(emoji, 'emoji.html', 'png');
    assert.ok(png.path, JSON.stringify(png.error));
    assert.ok(await colourful(png.path) > 200, 'the emoji in the PNG is in colour');
    const pdf = await convert(emoji, 'emoji.html', 'pdf');
    assert.ok(pdf.path, JSON.stringify(pdf.error));
    await run('pdftoppm', ['-r', '72', '-png', '-singlefile', pdf.path, join(dir, 'emoji-page')]);
    assert.ok(await colourful(join(dir, 'emoji-page.png')) > 100, 'the emoji in the PDF is in colour');
  });

  it('Markdown -> pdf: every script in the text layer, in a font that has it', async () => {
    const markdown = `# Scripts\n\n${SCRIPTS.map(([script, sample]) => `${script}: ${sample}`).join('\n\n')}\n`;
    const { path, error } = await convert(markdown, 'scripts.md', 'pdf');
    assert.ok(path, JSON.stringify(error));
    assertText(await pdfText(path), 'md');
    const { path: rendered } = await convert(markdown, 'scripts.md', 'png');
    assert.ok(rendered);
  });

  it('plain text -> pdf: other scripts and emoji go to Chromium (shaped, right to left where written so, colour emoji); Latin stays with the PDF engine; a character no font has is refused by name', async () => {
    const text = `${[...SCRIPTS.map(([, sample]) => sample)].join('\f')}\f${EMOJI}\n`;
    const { path, error } = await convert(text, 'scripts.txt', 'pdf');
    assert.ok(path, JSON.stringify(error));
    assertText(await pdfText(path), 'txt');
    const rendered = await pages(path);
    assert.equal(rendered.length, SCRIPTS.length + 1, 'a form feed starts a page');
    for (const [index, [script]] of SCRIPTS.entries()) {
      assert.ok(ink(rendered[index]!) > 255 * 5, `txt: ${script} has ink`);
      for (let other = 0; other < index; other++) assert.ok(difference(rendered[index]!, rendered[other]!) > 0, `txt: ${script} looks like ${SCRIPTS[other]![0]}`);
    }
    await run('pdftoppm', ['-r', '72', '-png', '-f', String(SCRIPTS.length + 1), '-singlefile', path, join(dir, 'text-emoji')]);
    assert.ok(await colourful(join(dir, 'text-emoji.png')) > 30, 'the emoji of the text is in colour');

    const latin = await convert('Plain Latin text.\n', 'latin.txt', 'pdf');
    assert.ok(latin.path, JSON.stringify(latin.error));
    assert.deepEqual((await pdfFonts(latin.path)).map((font) => font.replace(/-\d+$/, '')), ['DejaVuSansMono'], 'set by the PDF engine in its one font');

    const refused = await convert(`Fine text, then ${NO_FONT}\n`, 'private.txt', 'pdf');
    assert.equal(refused.error?.code, 'input_invalid');
    assert.match(refused.error!.message, /Line 1, column 17: "\u{11F04}" \(U\+11F04\) is in none of the fonts installed/u);
  });
});
