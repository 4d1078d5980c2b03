/**
 * What a PDF says: the text of each page as PDFium extracts it (the pdfpages engine's library),
 * so that a test compares a PDF's words with its fixture's, not only its page count.
 */
import { loadPdfium } from '../../src/engines/pdfpages/pdfium.ts';

export async function pdfPageTexts(path: string): Promise<string[]> {
  const pdfium = await loadPdfium();
  return pdfium.exclusive(async () => {
    const document = pdfium.open(path);
    try {
      return Array.from({ length: document.pageCount }, (_, index) => document.text(index));
    } finally {
      document.close();
    }
  });
}
