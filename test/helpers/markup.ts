/**
 * What the markup suites share: fixtures written by hand (md, html, rst, org, LaTeX, text) or made
 * by pandoc itself (docx, odt, epub), each holding a marker text under a heading, and how an
 * output is opened again (a zip through the system's `unzip`, else Python's zipfile) to find it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findPandoc } from '../../src/engines/markup/pandoc.ts';

const run = promisify(execFile);

/** The text every markup fixture holds, and every output of it must hold again. */
export const DOCUMENT_MARKER = 'MARKER-ZEBRA-42';
export const DOCUMENT_HEADING = 'Quarterly report';

/** The fixtures written by hand, by source format. */
export const MARKUP_TEXTS: Record<string, string> = {
  md: `# ${DOCUMENT_HEADING}\n\nThe marker: ${DOCUMENT_MARKER}.\n\n## Second section\n\nZürich and Ωmega, with *emphasis* and a [link](https://example.com/).\n`,
  html: [
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><title>Fixture</title></head><body>',
    `<h1>${DOCUMENT_HEADING}</h1>`,
    `<p>The marker: ${DOCUMENT_MARKER}.</p>`,
    '<h2>Second section</h2>',
    '<p>Zürich and Ωmega, with <em>emphasis</em> and a <a href="https://example.com/">link</a>.</p>',
    '</body></html>',
    '',
  ].join('\n'),
  rst: `${DOCUMENT_HEADING}\n${'='.repeat(DOCUMENT_HEADING.length)}\n\nThe marker: ${DOCUMENT_MARKER}.\n\nSecond section\n--------------\n\nZürich and Ωmega, with *emphasis*.\n`,
  org: `* ${DOCUMENT_HEADING}\nThe marker: ${DOCUMENT_MARKER}.\n** Second section\nZürich and Ωmega, with /emphasis/.\n`,
  latex: [
    '\\documentclass{article}',
    '\\begin{document}',
    `\\section{${DOCUMENT_HEADING}}`,
    `The marker: ${DOCUMENT_MARKER}.`,
    '\\subsection{Second section}',
    'Zürich and $\\Omega$mega, with \\emph{emphasis}.',
    '\\end{document}',
    '',
  ].join('\n'),
  txt: `${DOCUMENT_HEADING}\n\nThe marker: ${DOCUMENT_MARKER}.\nA second line of the same paragraph: Zürich and Ωmega.\n`,
};

/** Sources pandoc makes from the Markdown fixture (trusted input: no sandbox needed). */
const MADE_BY_PANDOC = new Set(['docx', 'odt', 'epub']);

/** pandoc as the engine finds it (CONVD_PANDOC_PATH, else PATH), or undefined. */
export async function pandocPath(): Promise<string | undefined> {
  return (await findPandoc(process.env))?.path;
}

/** Writes `fixture.<source>` into `dir` (a source without a recipe fails: add one). */
export async function makeMarkupFixture(dir: string, source: string, name = `fixture.${source}`): Promise<string> {
  const path = join(dir, name);
  if (MADE_BY_PANDOC.has(source)) {
    const pandoc = await pandocPath();
    assert.ok(pandoc, 'a docx, odt or epub fixture needs pandoc (apt-get install pandoc)');
    const markdown = join(dir, `${name}.source.md`);
    await writeFile(markdown, MARKUP_TEXTS.md!);
    await run(pandoc, ['--from=gfm', `--to=${source === 'epub' ? 'epub3' : source}`, '--metadata=title:Fixture', `--output=${path}`, markdown]);
    return path;
  }
  const text = MARKUP_TEXTS[source];
  assert.ok(text !== undefined, `no markup fixture recipe for source ${source}: add one`);
  await writeFile(path, text);
  return path;
}

export interface ZipContents {
  entries: string[];
  /** Every member's bytes, one after the other, as latin1 (byte for byte: ASCII markers are found anywhere). */
  bytes(): Promise<string>;
  /** The text of members, one after the other. */
  text(...names: string[]): Promise<string>;
}

const UNZIP = ['/usr/bin/unzip', '/bin/unzip'].find((path) => existsSync(path));
const PYTHON_LIST = 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))';
const PYTHON_READ = 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); names = sys.argv[2:] or z.namelist(); sys.stdout.buffer.write(b"".join(z.read(n) for n in names))';

async function output(file: string, args: string[]): Promise<Buffer> {
  const { stdout } = await run(file, args, { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

/** Opens a zip (docx, odt, epub) with the system's unzip, else /usr/bin/python3's zipfile. */
export async function openZip(path: string): Promise<ZipContents> {
  const read = (names: string[]) => (UNZIP ? output(UNZIP, ['-p', path, ...names]) : output('/usr/bin/python3', ['-c', PYTHON_READ, path, ...names]));
  const list = UNZIP ? await output(UNZIP, ['-Z1', path]) : await output('/usr/bin/python3', ['-c', PYTHON_LIST, path]);
  return {
    entries: list.toString('utf8').split('\n').map((line) => line.trim()).filter(Boolean),
    bytes: async () => (await read([])).toString('latin1'),
    text: async (...names) => (await read(names)).toString('utf8'),
  };
}

/** The zip members of each packaged target that must exist, and where its text lives. */
const PACKAGES: Record<string, { required: string[]; text: (entries: string[]) => string[] }> = {
  docx: { required: ['[Content_Types].xml', 'word/document.xml'], text: () => ['word/document.xml'] },
  odt: { required: ['mimetype', 'META-INF/manifest.xml', 'content.xml'], text: () => ['content.xml'] },
  epub: { required: ['mimetype', 'META-INF/container.xml'], text: (entries) => entries.filter((e) => e.endsWith('.xhtml')) },
};
const MIMETYPES: Record<string, string> = { odt: 'application/vnd.oasis.opendocument.text', epub: 'application/epub+zip' };

/**
 * Decodes a markup output as its target and returns its text (a package's document XML): it must
 * be well-formed for the target and hold the marker.
 */
export async function assertMarkupOutput(target: string, outputPath: string, marker = DOCUMENT_MARKER): Promise<string> {
  const packaged = PACKAGES[target];
  if (packaged) {
    const zip = await openZip(outputPath);
    for (const entry of packaged.required) assert.ok(zip.entries.includes(entry), `${target}: has ${entry} (${zip.entries.join(', ')})`);
    if (MIMETYPES[target]) assert.equal((await zip.text('mimetype')).trim(), MIMETYPES[target]);
    const members = packaged.text(zip.entries);
    assert.ok(members.length > 0, `${target}: has document text`);
    const text = await zip.text(...members);
    assert.ok(text.includes(marker), `${target}: the document text holds ${marker}`);
    return text;
  }
  const bytes = await readFile(outputPath);
  if (target === 'rtf') {
    assert.equal(bytes.subarray(0, 6).toString('latin1'), '{\\rtf1', 'rtf: an RTF document');
    const pandoc = await pandocPath();
    assert.ok(pandoc, 'reading an RTF result needs pandoc');
    // Its text through pandoc's RTF reader: words split by RTF's escapes and groups are whole there.
    const text = (await run(pandoc, ['--quiet', '--from=rtf', '--to=plain', '--wrap=none', outputPath], { maxBuffer: 64 * 1024 * 1024 })).stdout;
    assert.ok(text.includes(marker), `rtf: holds ${marker}`);
    return text;
  }
  assert.ok(['html', 'md', 'rst', 'txt'].includes(target), `no expectation for markup target ${target}: add one`);
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  assert.ok(!text.includes('\u0000'), `${target}: text`);
  if (target === 'html') {
    assert.match(text, /^<!DOCTYPE html>/);
    assert.match(text, /<body>[\s\S]*<\/body>/);
  }
  assert.ok(text.includes(marker), `${target}: holds ${marker}`);
  return text;
}
