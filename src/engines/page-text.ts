/*
 * Text as the service writes it from pages (pdf -> txt, OCR's text): UTF-8, LF line ends, pages
 * separated by a form feed, one newline at the end.
 */

/** Control characters other than tab and newline (a form feed among them: it separates the pages). */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F]/g;

/** Page text as a text file has it: LF line ends, no control characters. */
export function cleanText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL, '');
}

/**
 * Pages' text as the service writes it: `raw`, whose pages a form feed separates (OCRmyPDF's
 * sidecar puts one between pages; Tesseract ends every page with one, so an empty last page is
 * dropped), each page cleaned and its trailing white space cut.
 */
export function pagedText(raw: string): string {
  const pages = raw.split('\f');
  if (pages.length > 1 && pages.at(-1)!.trim() === '') pages.pop();
  return `${pages.map((page) => cleanText(page).replace(/\s+$/, '')).join('\f')}\n`;
}
