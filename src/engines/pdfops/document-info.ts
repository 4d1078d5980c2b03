import { PDFDict, PDFName, type PDFDocument } from 'pdf-lib';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionOptions } from '../../model/conversion.ts';
import type { DocumentInfo } from './pdfa.ts';
import { asksForMetadata } from './requests.ts';


/** `2026-11-28` (midnight UTC) or an ISO 8601 date and time (UTC when it names no zone). */
function parseDate(value: string): Date {
  const date = new Date(/T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value}Z` : value);
  if (Number.isNaN(date.getTime())) throw new ConversionFailure('input_invalid', `creation_date: ${value} is not a date.`);
  return date;
}

/**
 * Writes the fields asked for into the Info dictionary. The catalog's XMP packet, which readers
 * prefer and which would still say the old values, is dropped; a PDF/A gets a new one.
 */
export function applyMetadata(doc: PDFDocument, options: ConversionOptions): void {
  if (!asksForMetadata(options)) return;
  const { title, author, subject, keywords, creation_date: created } = options;
  if (typeof title === 'string') doc.setTitle(title);
  if (typeof author === 'string') doc.setAuthor(author);
  if (typeof subject === 'string') doc.setSubject(subject);
  if (typeof keywords === 'string') doc.setKeywords(keywords.split(',').map((word) => word.trim()).filter((word) => word !== ''));
  if (typeof created === 'string') doc.setCreationDate(parseDate(created));
  if (typeof options.document_language === 'string') doc.setLanguage(options.document_language);
  doc.setModificationDate(new Date());
  doc.catalog.delete(PDFName.of('Metadata'));
}

/** The document information as it stands, for a PDF/A's DOCINFO. */
export function readInfo(doc: PDFDocument): DocumentInfo {
  const info: DocumentInfo = {};
  const set = <K extends keyof DocumentInfo>(key: K, value: DocumentInfo[K] | undefined): void => {
    if (value !== undefined) info[key] = value;
  };
  const read = <T>(get: () => T): T | undefined => {
    try {
      return get();
    } catch {
      // A field of the wrong type (a number where text belongs) is left out, not fatal.
      return undefined;
    }
  };
  set('Title', read(() => doc.getTitle()));
  set('Author', read(() => doc.getAuthor()));
  set('Subject', read(() => doc.getSubject()));
  set('Keywords', read(() => doc.getKeywords()));
  set('Creator', read(() => doc.getCreator()));
  set('CreationDate', read(() => doc.getCreationDate()));
  return info;
}

/** Whether the document has an Info dictionary at all (pdf-lib adds none where it reads one). */
export function hasInfo(doc: PDFDocument): boolean {
  return doc.context.lookup(doc.context.trailerInfo.Info) instanceof PDFDict;
}
