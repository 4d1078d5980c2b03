/**
 * Pages' text as OCR's results are written (src/engines/page-text.ts): the same form as pdf -> txt,
 * each page's last line ended by a newline, pages separated by a form feed, as pdftotext writes.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
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

  // A complexity guard, not a speed measure: with /\s+$/ this page took 187 s, here a few ms. It
  // runs in a process of its own, killed at its deadline: a synchronous call outlasts node:test's
  // own timeout, which then passes it.
  it('cuts a page\'s trailing blanks in one pass: a page with 200,000 spaces in a row inside it', async () => {
    const script = [
      `import { pagedText, pageText } from ${JSON.stringify(new URL('../../src/engines/page-text.ts', import.meta.url).href)};`,
      "const spaced = `left${' '.repeat(200_000)}right \\n`;",
      'console.log(JSON.stringify([pageText(spaced), pagedText(`${spaced}\\f${spaced}`)]));',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 20_000, maxBuffer: 4 * 1024 * 1024 });
    const page = `left${' '.repeat(200_000)}right\n`;
    assert.deepEqual(JSON.parse(stdout), [page, `${page}\f${page}`]);
  });
});
