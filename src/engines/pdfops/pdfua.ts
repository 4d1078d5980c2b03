import { PDFArray, PDFBool, PDFDict, PDFName, PDFRawStream, PDFRef, PDFString, PDFHexString, type PDFDocument, type PDFObject } from 'pdf-lib';
import { ConversionFailure } from '../../errors/api-error.ts';

/*
 * PDF/UA-1 (ISO 14289-1) for a PDF that is already tagged: its structure is the author's and is
 * kept as it is; what the standard asks of the document beside it is checked or written. Tags
 * cannot be made from a page's drawing (which text is a heading, what an image shows, the
 * reading order): a PDF without them is refused, naming where tags come from.
 */

/** Fonts named in a refusal, at most. */
const NAMED_FONTS = 5;
/** Form XObjects followed into, at most: a page's resources may nest them. */
const MAX_FORM_DEPTH = 8;

const dictAt = (doc: PDFDocument, object: PDFObject | undefined): PDFDict | undefined => {
  const resolved = object instanceof PDFRef ? doc.context.lookup(object) : object;
  return resolved instanceof PDFDict ? resolved : resolved instanceof PDFRawStream ? resolved.dict : undefined;
};

const textOf = (object: PDFObject | undefined): string | undefined =>
  object instanceof PDFString || object instanceof PDFHexString ? object.decodeText() : undefined;

/** The names of the fonts the pages use whose program is not in the file (Type 3 fonts are drawn by the file itself). */
function unembeddedFonts(doc: PDFDocument): string[] {
  const missing = new Set<string>();
  const seen = new Set<PDFDict>();
  const visitFont = (font: PDFDict): void => {
    if (seen.has(font)) return;
    seen.add(font);
    const subtype = font.get(PDFName.of('Subtype'));
    if (subtype === PDFName.of('Type3')) return;
    if (subtype === PDFName.of('Type0')) {
      const descendants = doc.context.lookup(font.get(PDFName.of('DescendantFonts')));
      if (descendants instanceof PDFArray) for (const child of descendants.asArray()) { const dict = dictAt(doc, child); if (dict) visitFont(dict); }
      return;
    }
    const descriptor = dictAt(doc, font.get(PDFName.of('FontDescriptor')));
    const embedded = descriptor && ['FontFile', 'FontFile2', 'FontFile3'].some((key) => descriptor.get(PDFName.of(key)) !== undefined);
    if (!embedded) missing.add(String(font.get(PDFName.of('BaseFont')) ?? '(unnamed)').replace(/^\//, ''));
  };
  const visitResources = (resources: PDFDict | undefined, depth: number): void => {
    if (!resources || depth > MAX_FORM_DEPTH) return;
    const fonts = dictAt(doc, resources.get(PDFName.of('Font')));
    for (const value of fonts?.values() ?? []) { const font = dictAt(doc, value); if (font) visitFont(font); }
    const xobjects = dictAt(doc, resources.get(PDFName.of('XObject')));
    for (const value of xobjects?.values() ?? []) {
      const form = dictAt(doc, value);
      if (form?.get(PDFName.of('Subtype')) === PDFName.of('Form') && !seen.has(form)) {
        seen.add(form);
        visitResources(dictAt(doc, form.get(PDFName.of('Resources'))), depth + 1);
      }
    }
  };
  // Resources() reads them where the page inherits them from its parents too.
  for (const page of doc.getPages()) visitResources(page.node.Resources(), 0);
  return [...missing];
}

const escapeXml = (value: string): string => value.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The XMP packet of a PDF/UA: the document information in Dublin Core, PDF and XMP terms, and pdfuaid:part 1. */
function xmpPacket(doc: PDFDocument, language: string): string {
  const read = <T>(get: () => T): T | undefined => {
    try {
      return get();
    } catch {
      return undefined;
    }
  };
  const title = read(() => doc.getTitle()) ?? '';
  const author = read(() => doc.getAuthor());
  const subject = read(() => doc.getSubject());
  const keywords = read(() => doc.getKeywords());
  const producer = read(() => doc.getProducer());
  const created = read(() => doc.getCreationDate());
  const modified = read(() => doc.getModificationDate()) ?? new Date();
  const alt = (value: string) => `<rdf:Alt><rdf:li xml:lang="x-default">${escapeXml(value)}</rdf:li></rdf:Alt>`;
  return [
    '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>',
    '<x:xmpmeta xmlns:x="adobe:ns:meta/">',
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">',
    '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/"'
      + ' xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:pdfuaid="http://www.aiim.org/pdfua/ns/id/">',
    '<pdfuaid:part>1</pdfuaid:part>',
    `<dc:title>${alt(title)}</dc:title>`,
    `<dc:language><rdf:Bag><rdf:li>${escapeXml(language)}</rdf:li></rdf:Bag></dc:language>`,
    ...(author ? [`<dc:creator><rdf:Seq><rdf:li>${escapeXml(author)}</rdf:li></rdf:Seq></dc:creator>`] : []),
    ...(subject ? [`<dc:description>${alt(subject)}</dc:description>`] : []),
    ...(keywords ? [`<pdf:Keywords>${escapeXml(keywords)}</pdf:Keywords>`] : []),
    ...(producer ? [`<pdf:Producer>${escapeXml(producer)}</pdf:Producer>`] : []),
    ...(created ? [`<xmp:CreateDate>${created.toISOString()}</xmp:CreateDate>`] : []),
    `<xmp:ModifyDate>${modified.toISOString()}</xmp:ModifyDate>`,
    `<xmp:MetadataDate>${modified.toISOString()}</xmp:MetadataDate>`,
    '</rdf:Description>',
    '</rdf:RDF>',
    '</x:xmpmeta>',
    '<?xpacket end="w"?>',
  ].join('\n');
}

/**
 * Makes a tagged PDF a PDF/UA-1: checks that it has tags, a title, a language and every font
 * embedded (each refusal says what to give or do), then marks it as tagged, has readers show
 * its title, orders each page's tab stops by its structure and writes the XMP packet with
 * `pdfuaid:part` 1. Runs after the metadata step, so `title` and `document_language` count.
 */
export function makePdfUa(doc: PDFDocument): void {
  const { catalog } = doc;
  if (!dictAt(doc, catalog.get(PDFName.of('StructTreeRoot')))) {
    throw new ConversionFailure('input_invalid', 'The PDF has no tags (no structure tree), and PDF/UA needs them: they cannot be made from how the pages look. '
      + 'Make the PDF from its source with tags (for a document: docx -> pdf with pdf_ua=true).');
  }
  let title: string | undefined;
  try {
    title = doc.getTitle()?.trim();
  } catch {
    title = undefined;
  }
  if (!title) throw new ConversionFailure('input_invalid', 'PDF/UA needs a document title, and this PDF has none: give one (option title).');
  const language = textOf(catalog.get(PDFName.of('Lang')))?.trim();
  if (!language) throw new ConversionFailure('input_invalid', 'PDF/UA needs the document\'s language, and this PDF names none: give it (option document_language, e.g. en-US).');
  const missing = unembeddedFonts(doc);
  if (missing.length > 0) {
    const named = missing.slice(0, NAMED_FONTS).join(', ') + (missing.length > NAMED_FONTS ? ` and ${missing.length - NAMED_FONTS} more` : '');
    throw new ConversionFailure('input_invalid', `PDF/UA needs every font embedded, and ${missing.length === 1 ? 'this one is' : 'these are'} not: ${named}. Make the PDF with its fonts embedded.`);
  }
  const markInfo = dictAt(doc, catalog.get(PDFName.of('MarkInfo'))) ?? doc.context.obj({});
  markInfo.set(PDFName.of('Marked'), PDFBool.True);
  catalog.set(PDFName.of('MarkInfo'), markInfo);
  const preferences = dictAt(doc, catalog.get(PDFName.of('ViewerPreferences'))) ?? doc.context.obj({});
  preferences.set(PDFName.of('DisplayDocTitle'), PDFBool.True);
  catalog.set(PDFName.of('ViewerPreferences'), preferences);
  for (const page of doc.getPages()) if (page.node.get(PDFName.of('Annots')) !== undefined) page.node.set(PDFName.of('Tabs'), PDFName.of('S'));
  const xmp = doc.context.stream(new TextEncoder().encode(xmpPacket(doc, language)), { Type: 'Metadata', Subtype: 'XML' });
  catalog.set(PDFName.of('Metadata'), doc.context.register(xmp));
}
