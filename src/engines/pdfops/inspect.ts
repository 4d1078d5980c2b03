import { open } from 'node:fs/promises';
import { decodePDFRawStream, PDFBool, PDFDict, PDFName, PDFRawStream, type PDFDocument } from 'pdf-lib';
import { normalRotation } from './placement.ts';

/** What pdf -> json says of a PDF. */
export interface PdfFacts {
  pages: number;
  /** Each page's visible area in points as shown (width and height swapped by a quarter turn), and its turn. */
  page_sizes: { page: number; width: number; height: number; rotation: number }[];
  title: string | null;
  author: string | null;
  subject: string | null;
  keywords: string | null;
  creator: string | null;
  producer: string | null;
  creation_date: string | null;
  modification_date: string | null;
  pdf_version: string | null;
  encrypted: boolean;
  tagged: boolean;
  form_fields: number;
  /** The PDF/A part and conformance its XMP packet claims (`2B`), or null. */
  pdfa: string | null;
}

const round = (points: number): number => Math.round(points * 100) / 100;

function field<T>(get: () => T | undefined): T | null {
  try {
    return get() ?? null;
  } catch {
    return null;
  }
}

/** The header's version (`%PDF-1.7`); a later one in the catalog (/Version) wins. */
async function headerVersion(path: string): Promise<string | null> {
  const file = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(1024), 0, 1024, 0);
    return /%PDF-(\d\.\d)/.exec(buffer.subarray(0, bytesRead).toString('latin1'))?.[1] ?? null;
  } finally {
    await file.close();
  }
}

function pdfaClaim(doc: PDFDocument): string | null {
  const metadata = doc.catalog.lookup(PDFName.of('Metadata'));
  if (!(metadata instanceof PDFRawStream)) return null;
  const xmp = Buffer.from(decodePDFRawStream(metadata).decode()).toString('utf8');
  const part = /pdfaid:part(?:=["']|>)\s*(\d)/.exec(xmp)?.[1];
  const conformance = /pdfaid:conformance(?:=["']|>)\s*([A-Za-z])/.exec(xmp)?.[1];
  return part ? `${part}${conformance?.toUpperCase() ?? ''}` : null;
}

function isTagged(doc: PDFDocument): boolean {
  const markInfo = doc.catalog.lookup(PDFName.of('MarkInfo'));
  const marked = markInfo instanceof PDFDict ? markInfo.lookup(PDFName.of('Marked')) : undefined;
  return (marked instanceof PDFBool && marked.asBoolean()) || doc.catalog.has(PDFName.of('StructTreeRoot'));
}

/** Reads the facts of `doc` (opened from `originalPath`, decrypted if it was `encrypted`). */
export async function inspectPdf(doc: PDFDocument, originalPath: string, encrypted: boolean): Promise<PdfFacts> {
  const catalogVersion = doc.catalog.lookup(PDFName.of('Version'));
  const header = await headerVersion(originalPath);
  const version = catalogVersion instanceof PDFName && header !== null && catalogVersion.decodeText() > header ? catalogVersion.decodeText() : header;
  return {
    pages: doc.getPageCount(),
    page_sizes: doc.getPages().map((page, index) => {
      const box = page.getCropBox();
      const rotation = normalRotation(page.getRotation().angle);
      const sideways = rotation === 90 || rotation === 270;
      return { page: index + 1, width: round(sideways ? box.height : box.width), height: round(sideways ? box.width : box.height), rotation };
    }),
    title: field(() => doc.getTitle()),
    author: field(() => doc.getAuthor()),
    subject: field(() => doc.getSubject()),
    keywords: field(() => doc.getKeywords()),
    creator: field(() => doc.getCreator()),
    producer: field(() => doc.getProducer()),
    creation_date: field(() => doc.getCreationDate()?.toISOString()),
    modification_date: field(() => doc.getModificationDate()?.toISOString()),
    pdf_version: version,
    encrypted,
    tagged: isTagged(doc),
    form_fields: field(() => doc.getForm().getFields().length) ?? 0,
    pdfa: field(() => pdfaClaim(doc)),
  };
}
