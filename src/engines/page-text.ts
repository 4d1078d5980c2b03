/*
 * Text as the service writes it from pages (pdf -> txt, OCR's text): UTF-8, LF line ends, every
 * page's last line ended by a newline and pages separated by a form feed, as pdftotext writes them
 * (so a page's last line and the next page's first are two lines to `grep` and `wc -l`).
 */

/** Control characters other than tab and newline (a form feed among them: it separates the pages). */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F]/g;

/** Page text as a text file has it: LF line ends, no control characters. */
function cleanText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL, '');
}

/**
 * One page's text as written: cleaned, its trailing white space cut, a newline after its last line
 * (none for an empty page). trimEnd, not `/\s+$/`: the regular expression tries every position of a
 * run of spaces inside the page (8.9 s for a page holding 100,000 spaces in a row).
 */
export function pageText(text: string): string {
  const cut = cleanText(text).trimEnd();
  return cut === '' ? '' : `${cut}\n`;
}

/**
 * Pages' text as the service writes it: `raw`, whose pages a form feed separates (OCRmyPDF's
 * sidecar puts one between pages; Tesseract ends every page with one, so an empty last page is
 * dropped), each page cleaned and its trailing white space cut.
 */
export function pagedText(raw: string): string {
  const pages = raw.split('\f');
  if (pages.length > 1 && pages.at(-1)!.trim() === '') pages.pop();
  const text = pages.map(pageText).join('\f');
  return text.endsWith('\n') ? text : `${text}\n`;
}
