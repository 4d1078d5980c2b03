/** What a converted PDF says about its layout: its page count and the fonts it embeds. */
import { PDFDict, PDFDocument, PDFName } from 'pdf-lib';

export interface PdfFacts {
  pages: number;
  /** Base font names without the subset tag (`ABCDEF+`), sorted, each once. */
  fonts: string[];
}

export async function pdfFacts(data: Uint8Array): Promise<PdfFacts> {
  const pdf = await PDFDocument.load(data, { ignoreEncryption: true, updateMetadata: false });
  const fonts = new Set<string>();
  for (const [, object] of pdf.context.enumerateIndirectObjects()) {
    if (!(object instanceof PDFDict) || object.get(PDFName.of('Type')) !== PDFName.of('Font')) continue;
    const base = object.get(PDFName.of('BaseFont'));
    if (base instanceof PDFName) fonts.add(base.decodeText().replace(/^[A-Z]{6}\+/, ''));
  }
  return { pages: pdf.getPageCount(), fonts: [...fonts].sort() };
}
