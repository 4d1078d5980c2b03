/**
 * cleanFileName: what is left of a client's file name to show as `original_name`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cleanFileName } from '../../src/inputs/file-name.ts';

const BIDI = ['\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
const LINE_BREAKS = ['\u2028', '\u2029', '\u0085'];
const C1 = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(0x80 + i));

const hex = (text: string) => [...text].map((c) => c.codePointAt(0)!.toString(16).padStart(4, '0')).join(' ');

describe('cleanFileName', () => {
  it('removes C0 controls and DEL, path separators and leading dots, as before', () => {
    assert.equal(cleanFileName('a\u0000b\u001f\u007fc.png', 'x'), 'abc.png');
    assert.equal(cleanFileName('../../etc/passwd', 'x'), 'passwd');
    assert.equal(cleanFileName('C:\\Users\\me\\..hidden.png', 'x'), 'hidden.png');
    assert.equal(cleanFileName('', 'upload'), 'upload');
    assert.equal(cleanFileName(undefined, 'upload'), 'upload');
  });

  it('removes every bidi mark, embedding, override and isolate', () => {
    // Shown raw, U+202E makes this read `invoiceexe.pdf`.
    assert.equal(cleanFileName('invoice\u202efdp.exe', 'x'), 'invoicefdp.exe');
    for (const char of BIDI) assert.equal(cleanFileName(`a${char}b.png`, 'x'), 'ab.png', hex(char));
  });

  it('removes U+2028, U+2029 and every C1 control (U+0080-U+009F, U+0085 among them)', () => {
    for (const char of [...LINE_BREAKS, ...C1]) assert.equal(cleanFileName(`a${char}b.png`, 'x'), 'ab.png', hex(char));
  });

  it('falls back when nothing showable is left, and keeps other non-ASCII letters', () => {
    assert.equal(cleanFileName(`${BIDI.join('')}${LINE_BREAKS.join('')}`, 'upload'), 'upload');
    assert.equal(cleanFileName('\u202e.png', 'upload'), 'png', 'the dot left in front after the removal goes too');
    assert.equal(cleanFileName('Übersicht – 北京 العربية.png', 'x'), 'Übersicht – 北京 العربية.png');
    // Joiners are part of how emoji and some scripts are written: they stay.
    assert.equal(cleanFileName('👩\u200d💻.png', 'x'), '👩\u200d💻.png');
  });
});
