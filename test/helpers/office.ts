/**
 * What the office suites share: fixtures LibreOffice makes itself (office-fixtures.py), and how an
 * office output is opened again to find the fixture's marker text.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pdfPageTexts } from './pdf-text.ts';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import type { OfficeInstall } from '../../src/engines/office/find-office.ts';

const run = promisify(execFile);

/** The text every office fixture holds, and every output of it must hold again. */
export const OFFICE_MARKER = 'MARKER-ZEBRA-42';

export type ReadyOffice = Extract<OfficeInstall, { ready: true }>;

/**
 * Writes fixture.<docx|doc|odt|rtf|xlsx|xls|ods|pptx|ppt|odp>, pages.docx (three pages) and
 * protected.odt/.ods (password "sesame") into `dir`, in one start of LibreOffice.
 */
export async function makeOfficeFixtures(office: ReadyOffice, dir: string): Promise<void> {
  const bridgeDir = fileURLToPath(new URL('../../src/engines/office/', import.meta.url));
  await run(office.python, [join(dirname(fileURLToPath(import.meta.url)), 'office-fixtures.py'), bridgeDir, office.sofficeBin, dir, OFFICE_MARKER]);
}

/** A CSV of the office fixtures' cells. */
export const OFFICE_CSV = `name,value\n${OFFICE_MARKER},42\nZürich,7\n`;

/** The text of one member of a zip (docx, xlsx, pptx, odt, ods, odp), read with the office's Python. */
export async function zipMember(python: string, path: string, member: string): Promise<string> {
  const script = 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode("utf-8"))';
  const { stdout } = await run(python, ['-c', script, path, member], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

const ZIP_TEXT: Record<string, string> = {
  docx: 'word/document.xml', xlsx: 'xl/sharedStrings.xml', pptx: 'ppt/slides/slide1.xml',
  odt: 'content.xml', ods: 'content.xml', odp: 'content.xml', odg: 'content.xml',
};
const SLIDES = new Set(['pptx', 'ppt', 'odp', 'otp', 'potx', 'pot', 'fodp']);

/** Opens an office output of a fixture again: a PDF's pages, a package's XML or a text must hold the marker. */
export async function assertOfficeOutput(office: ReadyOffice, source: string, target: string, output: string): Promise<void> {
  const bytes = await readFile(output);
  if (target === 'pdf') {
    const pdf = await PDFDocument.load(bytes);
    assert.equal(pdf.getPageCount(), SLIDES.has(source) ? 2 : 1, 'one page per slide, one page of text or cells');
    assert.match((await pdfPageTexts(output)).join('\n'), new RegExp(OFFICE_MARKER), 'the PDF\'s text holds the marker');
  } else if (target === 'png') {
    // A drawing's page: the text box's marker is drawn in black on white.
    const { data, info } = await sharp(bytes).flatten({ background: '#ffffff' }).greyscale().raw().toBuffer({ resolveWithObject: true });
    assert.ok(info.width > 100 && info.height > 100, `a page-sized image (${info.width} x ${info.height})`);
    assert.ok(data.some((value) => value < 64), 'something dark is drawn on the page');
  } else if (target === 'svg') {
    const svg = bytes.toString('utf8');
    assert.match(svg, /<svg[\s>]/);
    assert.match(svg, new RegExp(OFFICE_MARKER), 'the drawing\'s text is in the SVG');
  } else if (ZIP_TEXT[target]) {
    assert.match(await zipMember(office.python, output, ZIP_TEXT[target]!), new RegExp(OFFICE_MARKER));
  } else {
    assert.ok(['rtf', 'txt', 'csv', 'html'].includes(target), `no expectation for office target ${target}: add one`);
    const text = bytes.toString('utf8');
    assert.notEqual(text.charCodeAt(0), 0xfeff, 'no byte-order mark');
    assert.match(text, new RegExp(OFFICE_MARKER));
    if (target === 'csv') assert.match(text, new RegExp(`${OFFICE_MARKER},42`));
  }
}
