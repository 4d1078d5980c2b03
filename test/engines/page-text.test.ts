/**
 * Pages' text as OCR's results are written (src/engines/page-text.ts): the same form as pdf -> txt,
 * each page's last line ended by a newline, pages separated by a form feed, as pdftotext writes.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { pagedText } from '../../src/engines/page-text.ts';

describe('pagedText', () => {
  it('ends each page\'s last line before the form feed; Tesseract\'s closing form feed and trailing blanks go', () => {
    assert.equal(pagedText('Page one\r\nends 1  \n\n\fPage two\n2\n\f'), 'Page one\nends 1\n\fPage two\n2\n');
  });

  it('keeps an empty page as its form feed alone and ends the file with one newline', () => {
    assert.equal(pagedText('first\n\f \n\fthird'), 'first\n\f\fthird\n');
    assert.equal(pagedText(''), '\n');
    assert.equal(pagedText('a\u0007b\f'), 'ab\n');
  });
});
