/**
 * field_scan.py (the office bridge's check whether a Writer document can hold a file-name field,
 * read from its XML): a document it calls field-free skips the UNO walk that replaces a server
 * path, so every doubt must answer True. Run under a Python as the bridge runs it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { docxOf, storedZipOf } from '../helpers/hostile-files.ts';

const run = promisify(execFile);
const OFFICE_DIR = fileURLToPath(new URL('../../src/engines/office/', import.meta.url));
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
const ODF_NS = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"';

function wordBody(paragraphs: string): string {
  return `<w:document ${W}><w:body>${paragraphs}</w:body></w:document>`;
}

function odt(content: string, extra: [string, string][] = []): Buffer {
  return storedZipOf([
    ['mimetype', 'application/vnd.oasis.opendocument.text'],
    ['content.xml', `<office:document-content ${ODF_NS}><office:body><office:text>${content}</office:text></office:body></office:document-content>`],
    ...extra,
  ]);
}

describe('field_scan.may_show_file_name', () => {
  let dir: string;
  let python: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-field-scan-'));
    const office = await findOffice(process.env);
    python = office.ready ? office.python : 'python3';
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** What the scan answers for these bytes under this source format. */
  async function scan(name: string, source: string, content: Buffer | string): Promise<boolean> {
    const path = join(dir, name);
    await writeFile(path, content);
    const script = 'import sys, field_scan; print(field_scan.may_show_file_name(sys.argv[1], sys.argv[2]))';
    const { stdout } = await run(python, ['-c', script, path, source], { cwd: OFFICE_DIR });
    assert.match(stdout, /^(True|False)\n$/, stdout);
    return stdout.trim() === 'True';
  }

  it('calls a Word or OpenDocument text without fields field-free', async () => {
    assert.equal(await scan('plain.docx', 'docx', docxOf(wordBody('<w:p><w:r><w:t>Only text, the word FILENAME too.</w:t></w:r></w:p>'))), false);
    const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#336699' } }).png().toBuffer();
    const withImage = storedZipOf([['word/document.xml', `<?xml version="1.0" encoding="UTF-8"?>${wordBody('<w:p/>')}`], ['word/media/image1.png', png]]);
    assert.equal(await scan('image.docx', 'docx', withImage), false, 'an image beside the text');
    assert.equal(await scan('plain.odt', 'odt', odt('<text:p>Only text.</text:p>')), false);
    assert.equal(await scan('plain.fodt', 'fodt', `<office:document ${ODF_NS}><office:body><office:text><text:p>Only text.</text:p></office:text></office:body></office:document>`), false);
  });

  it('sees a field in any form Word writes it, under any prefix, in any part', async () => {
    const simple = '<w:p><w:fldSimple w:instr="FILENAME \\p"><w:r><w:t>x</w:t></w:r></w:fldSimple></w:p>';
    const split = '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> FILE</w:instrText></w:r><w:r><w:instrText>NAME </w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>';
    assert.equal(await scan('simple.docx', 'docx', docxOf(wordBody(simple))), true);
    assert.equal(await scan('split.docm', 'docm', docxOf(wordBody(split))), true);
    const otherPrefix = `<x:document xmlns:x="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><x:body><x:p><x:fldSimple x:instr="FILENAME"/></x:p></x:body></x:document>`;
    assert.equal(await scan('prefix.docx', 'docx', docxOf(otherPrefix)), true);
    const inFooter = storedZipOf([['word/document.xml', wordBody('<w:p/>')], ['word/footer3.xml', `<w:ftr ${W}>${split}</w:ftr>`]]);
    assert.equal(await scan('footer.dotx', 'dotx', inFooter), true);
    // Another document brought in whole: its fields come with it.
    assert.equal(await scan('chunk.docx', 'docx', docxOf(wordBody('<w:altChunk r:id="rId9" xmlns:r="r"/>'))), true);
    assert.equal(await scan('subdoc.docx', 'docx', docxOf(wordBody('<w:p><w:subDoc r:id="rId9" xmlns:r="r"/></w:p>'))), true);
    assert.equal(await scan('marks.docx', 'docx', docxOf(wordBody('<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r></w:p>'))), true);
  });

  it('reads every entry whatever its name: LibreOffice finds parts through relationships', async () => {
    const header = `<w:hdr ${W}><w:p><w:fldSimple w:instr="FILENAME \\p"/></w:p></w:hdr>`;
    const elsewhere = storedZipOf([['word/document.xml', wordBody('<w:p/>')], ['hdr/header1.bin', header]]);
    assert.equal(await scan('elsewhere.docx', 'docx', elsewhere), true, 'a header outside word/, named .bin');
    const upper = storedZipOf([['Word/Document.XML', wordBody('<w:p><w:fldSimple w:instr="FILENAME"/></w:p>')]]);
    assert.equal(await scan('upper.docx', 'docx', upper), true);
  });

  it('answers True for a part whose bytes are not ASCII\'s, or that declares entities', async () => {
    const field = wordBody('<w:p><w:fldSimple w:instr="FILENAME \\p"/></w:p>');
    const utf16 = (bom: boolean) => Buffer.concat([bom ? Buffer.from([0xff, 0xfe]) : Buffer.alloc(0), Buffer.from(`<?xml version="1.0" encoding="UTF-16"?>${field}`, 'utf16le')]);
    assert.equal(await scan('utf16.docx', 'docx', storedZipOf([['word/document.xml', utf16(true)]])), true);
    assert.equal(await scan('utf16-nobom.docx', 'docx', storedZipOf([['word/document.xml', utf16(false)]])), true);
    // Field-free, but in an encoding the scan cannot read as written: not proven free.
    const declared = `<?xml version="1.0" encoding="IBM037"?>${wordBody('<w:p/>')}`;
    assert.equal(await scan('ebcdic.docx', 'docx', storedZipOf([['word/document.xml', declared]])), true);
    const entity = `<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY f "&#60;w:&#102;ldSimple w:instr='FILENAME'/&#62;">]>${wordBody('<w:p>&f;</w:p>')}`;
    assert.equal(await scan('entity.docx', 'docx', storedZipOf([['word/document.xml', entity]])), true);
  });

  it('sees an OpenDocument file-name field under any prefix, in styles or content', async () => {
    assert.equal(await scan('field.odt', 'odt', odt('<text:p><text:file-name text:display="full"/></text:p>')), true);
    assert.equal(await scan('prefix.ott', 'ott', odt('<text:p><t:file-name xmlns:t="urn:oasis:names:tc:opendocument:xmlns:text:1.0"/></text:p>')), true);
    assert.equal(await scan('styles.odt', 'odt', odt('<text:p/>', [['styles.xml', `<office:document-styles ${ODF_NS}><text:p><text:file-name/></text:p></office:document-styles>`]])), true);
    assert.equal(await scan('field.fodt', 'fodt', `<office:document ${ODF_NS}><text:p><text:file-name/></text:p></office:document>`), true);
    assert.equal(await scan('template.ott', 'ott', odt('<text:p><text:template-name text:display="full"/></text:p>')), true);
    const manifest = '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry></manifest:manifest>';
    assert.equal(await scan('encrypted.odt', 'odt', odt('<text:p/>', [['META-INF/manifest.xml', manifest]])), true, 'an encrypted package');
  });

  it('answers True for what it cannot read or does not know', async () => {
    assert.equal(await scan('damaged.docx', 'docx', Buffer.from('PK\u0003\u0004 not really a zip')), true);
    assert.equal(await scan('empty.docx', 'docx', storedZipOf([])), true, 'a package of nothing');
    assert.equal(await scan('letter.doc', 'doc', Buffer.from('\xd0\xcf\x11\xe0 binary Word', 'latin1')), true);
    assert.equal(await scan('letter.rtf', 'rtf', '{\\rtf1 text}'), true);
    assert.equal(await scan('missing.docx', 'docx', ''), true);
    // Parts larger than the scan reads are not read: a bomb costs nothing, and the walk decides.
    const large = 'x'.repeat(600 * 1024);
    assert.equal(await scan('large.docx', 'docx', docxOf(wordBody(`<w:p><w:r><w:t>${large}</w:t></w:r></w:p>`))), true);
  });
});
