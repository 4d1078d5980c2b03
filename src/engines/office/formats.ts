import type { FormatInfo, OptionDescriptor, VariantDescriptor } from '../../formats/types.ts';

/** Office documents, by family: what LibreOffice opens as a text, a spreadsheet or a presentation. */
export const TEXT_SOURCES = ['docx', 'doc', 'odt', 'rtf'] as const;
export const SHEET_SOURCES = ['xlsx', 'xls', 'ods', 'csv'] as const;
export const SLIDE_SOURCES = ['pptx', 'ppt', 'odp'] as const;

/** Targets of each family (never the source itself); csv is a source here only for sheets and pdf. */
export const TEXT_TARGETS = ['pdf', 'docx', 'odt', 'rtf', 'txt'] as const;
export const SHEET_TARGETS = ['pdf', 'xlsx', 'ods', 'csv'] as const;
export const SLIDE_TARGETS = ['pdf', 'pptx', 'odp'] as const;

export const OFFICE_FORMATS: FormatInfo[] = [
  { key: 'docx', extensions: ['docx'], mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  { key: 'doc', extensions: ['doc'], mime: 'application/msword' },
  { key: 'odt', extensions: ['odt'], mime: 'application/vnd.oasis.opendocument.text' },
  { key: 'rtf', extensions: ['rtf'], mime: 'application/rtf' },
  { key: 'xlsx', extensions: ['xlsx'], mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  { key: 'xls', extensions: ['xls'], mime: 'application/vnd.ms-excel' },
  { key: 'ods', extensions: ['ods'], mime: 'application/vnd.oasis.opendocument.spreadsheet' },
  { key: 'pptx', extensions: ['pptx'], mime: 'application/vnd.openxmlformats-officedocument.presentationml.presentation' },
  { key: 'ppt', extensions: ['ppt'], mime: 'application/vnd.ms-powerpoint' },
  { key: 'odp', extensions: ['odp'], mime: 'application/vnd.oasis.opendocument.presentation' },
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
  { key: 'csv', extensions: ['csv'], mime: 'text/csv' },
];

/**
 * LibreOffice's import filter for each source, always given: a file is read as what it claims to
 * be, or not at all. (Detected by content, a zip of random bytes named .docx was read as plain
 * text and "converted".) CSV is read as UTF-8, comma-separated, double-quoted.
 */
export const INPUT_FILTERS: Record<string, { filter: string; options?: string }> = {
  docx: { filter: 'MS Word 2007 XML' },
  doc: { filter: 'MS Word 97' },
  odt: { filter: 'writer8' },
  rtf: { filter: 'Rich Text Format' },
  xlsx: { filter: 'Calc MS Excel 2007 XML' },
  xls: { filter: 'MS Excel 97' },
  ods: { filter: 'calc8' },
  csv: { filter: 'Text - txt - csv (StarCalc)', options: '44,34,76,1' },
  pptx: { filter: 'Impress MS PowerPoint 2007 XML' },
  ppt: { filter: 'MS PowerPoint 97' },
  odp: { filter: 'impress8' },
};

/** The kind of document LibreOffice opened, as the bridge names it. */
export type OfficeDocumentKind = 'writer' | 'calc' | 'impress';

/** LibreOffice's export filter for each target, by the kind of document being written. */
export const OUTPUT_FILTERS: Record<string, Partial<Record<OfficeDocumentKind, string>> & { options?: string }> = {
  pdf: { writer: 'writer_pdf_Export', calc: 'calc_pdf_Export', impress: 'impress_pdf_Export' },
  docx: { writer: 'MS Word 2007 XML' },
  odt: { writer: 'writer8' },
  rtf: { writer: 'Rich Text Format' },
  // UTF-8 with LF line ends and no byte-order mark (the fifth token: LibreOffice writes one by default).
  txt: { writer: 'Text (encoded)', options: 'UTF8,LF,,,false' },
  xlsx: { calc: 'Calc MS Excel 2007 XML' },
  ods: { calc: 'calc8' },
  // Comma, double quotes only where needed (the seventh token), UTF-8, from the first line.
  csv: { calc: 'Text - txt - csv (StarCalc)', options: '44,34,76,1,,0,false,true,true' },
  pptx: { impress: 'Impress MS PowerPoint 2007 XML' },
  odp: { impress: 'impress8' },
};

/** PDF/A variants of every office -> pdf pair (LibreOffice's SelectPdfVersion), beside plain PDF. */
export const PDF_VARIANTS: VariantDescriptor[] = [
  { key: 'pdf', label: 'PDF' },
  { key: 'pdfa-1b', label: 'PDF/A-1b (archival)' },
  { key: 'pdfa-2b', label: 'PDF/A-2b (archival)' },
  { key: 'pdfa-3b', label: 'PDF/A-3b (archival)' },
];
export const PDF_VERSION: Record<string, number> = { pdf: 0, 'pdfa-1b': 1, 'pdfa-2b': 2, 'pdfa-3b': 3 };

const bool = (name: string, fallback: boolean, label: string): OptionDescriptor => ({ name, type: 'bool', values: [], default: fallback, label });

/** The password of a protected input: every pair has it; never shown with the conversion's options. */
export const PASSWORD_OPTION: OptionDescriptor = {
  name: 'password', type: 'text', values: [], max: 256, default: null, secret: true,
  label: 'Password of a password-protected document',
};

/** Options of office -> pdf, as rich as Gotenberg's LibreOffice route. */
export function pdfOptions(family: 'text' | 'sheet' | 'slides'): OptionDescriptor[] {
  const options: OptionDescriptor[] = [
    {
      name: 'pages', type: 'text', values: [], max: 200, pattern: '^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$', default: null,
      label: 'Pages to export, e.g. 1-3,5 (default: all)',
    },
  ];
  if (family !== 'slides') options.push(bool('landscape', false, 'Every page in landscape orientation'));
  options.push(
    bool('pdf_ua', false, 'Tagged, accessible PDF (PDF/UA)'),
    bool('export_bookmarks', true, 'Headings become PDF bookmarks'),
    bool('export_notes', false, family === 'slides' ? 'Speaker notes pages after the slides' : 'Comments as PDF annotations'),
    bool('export_form_fields', true, 'Form fields stay fillable'),
  );
  if (family === 'sheet') options.push(bool('single_page_sheets', false, 'Each sheet on one page, however large'));
  options.push(
    { name: 'quality', type: 'range', values: [], min: 1, max: 100, default: 90, label: 'JPEG quality of embedded images' },
    { name: 'max_image_resolution', type: 'enum', values: ['none', '75', '150', '300', '600', '1200'], default: 'none', label: 'Downsample images above this resolution (DPI)' },
    PASSWORD_OPTION,
  );
  return options;
}

/** Options of office -> another office format. */
export function documentOptions(): OptionDescriptor[] {
  return [PASSWORD_OPTION];
}
