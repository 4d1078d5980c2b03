import type { FormatInfo, OptionDescriptor, VariantDescriptor } from '../pairs.ts';

/**
 * Office documents, by family: what LibreOffice opens as a text, a spreadsheet, a presentation or
 * a drawing. A template (ott, dotx, dot...) and a flat OpenDocument file (one XML file: fodt...)
 * open as the documents of their family do, and convert to the same targets.
 */
export const TEXT_SOURCES = ['docx', 'doc', 'odt', 'rtf', 'ott', 'dotx', 'dot', 'fodt'] as const;
export const SHEET_SOURCES = ['xlsx', 'xls', 'ods', 'csv', 'ots', 'xltx', 'xlt', 'fods'] as const;
export const SLIDE_SOURCES = ['pptx', 'ppt', 'odp', 'otp', 'potx', 'pot', 'fodp'] as const;
export const DRAWING_SOURCES = ['odg', 'otg', 'fodg'] as const;
/** Every source of the engine: each opened from a directory of its own under the user's name (Engine.namesItsInputOf). */
export const OFFICE_SOURCES: readonly string[] = [...TEXT_SOURCES, ...SHEET_SOURCES, ...SLIDE_SOURCES, ...DRAWING_SOURCES];

/** Targets of each family (never the source itself); csv is a source here only for sheets and pdf. */
export const TEXT_TARGETS = ['pdf', 'docx', 'odt', 'rtf', 'txt'] as const;
export const SHEET_TARGETS = ['pdf', 'xlsx', 'ods', 'csv'] as const;
export const SLIDE_TARGETS = ['pdf', 'pptx', 'odp'] as const;
/**
 * A spreadsheet's cells as one HTML page (LibreOffice's "HTML (StarCalc)": every sheet a table,
 * with its column widths, alignment and number formats); not csv's, which the data engine's page
 * shows. Presentations have no html: Impress writes the slides' text alone, or a file per slide.
 */
export const SHEET_HTML_SOURCES = SHEET_SOURCES.filter((source) => source !== 'csv');
/** What LibreOffice Draw exports; png and svg are of the first page. */
export const DRAWING_TARGETS = ['pdf', 'png', 'svg', 'odg'] as const;

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
  { key: 'odg', extensions: ['odg'], mime: 'application/vnd.oasis.opendocument.graphics' },
  // Templates.
  { key: 'ott', extensions: ['ott'], mime: 'application/vnd.oasis.opendocument.text-template' },
  { key: 'dotx', extensions: ['dotx'], mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.template' },
  { key: 'dot', extensions: ['dot'], mime: 'application/msword' },
  { key: 'ots', extensions: ['ots'], mime: 'application/vnd.oasis.opendocument.spreadsheet-template' },
  { key: 'xltx', extensions: ['xltx'], mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.template' },
  { key: 'xlt', extensions: ['xlt'], mime: 'application/vnd.ms-excel' },
  { key: 'otp', extensions: ['otp'], mime: 'application/vnd.oasis.opendocument.presentation-template' },
  { key: 'potx', extensions: ['potx'], mime: 'application/vnd.openxmlformats-officedocument.presentationml.template' },
  { key: 'pot', extensions: ['pot'], mime: 'application/vnd.ms-powerpoint' },
  { key: 'otg', extensions: ['otg'], mime: 'application/vnd.oasis.opendocument.graphics-template' },
  // Flat OpenDocument: the whole document in one XML file.
  { key: 'fodt', extensions: ['fodt'], mime: 'application/vnd.oasis.opendocument.text-flat-xml' },
  { key: 'fods', extensions: ['fods'], mime: 'application/vnd.oasis.opendocument.spreadsheet-flat-xml' },
  { key: 'fodp', extensions: ['fodp'], mime: 'application/vnd.oasis.opendocument.presentation-flat-xml' },
  { key: 'fodg', extensions: ['fodg'], mime: 'application/vnd.oasis.opendocument.graphics-flat-xml' },
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
  { key: 'csv', extensions: ['csv'], mime: 'text/csv' },
  { key: 'html', extensions: ['html', 'htm'], mime: 'text/html' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'svg', extensions: ['svg'], mime: 'image/svg+xml' },
];

/**
 * Filters of the older versions of the binary formats (Word 6/95 and WinWord 5, Excel 4 to 95,
 * PowerPoint 95 which LibreOffice names "PowerPoint 3"), which the '97 filters refuse: taken only
 * where the '97 filter could not open the file and LibreOffice's type detection names one of them.
 */
const OLD_WORD = ['MS Word 95', 'MS WinWord 6.0', 'MS WinWord 5', 'MS Word 95 Vorlage'];
const OLD_EXCEL = ['MS Excel 95', 'MS Excel 5.0/95', 'MS Excel 4.0', 'MS Excel 95 Vorlage/Template', 'MS Excel 5.0/95 Vorlage/Template', 'MS Excel 4.0 Vorlage/Template'];
const OLD_POWERPOINT = ['PowerPoint 3'];

/**
 * What a file named as a binary Word or Excel file may be instead, and Word and Excel open as what
 * it is: Office 2003's XML formats saved under the old names. Keyed by the type LibreOffice's
 * detection names, asked only where the '97 filter refused the file; the value is the filter that
 * reads it into the claimed family. `sendAs`: refused, with a message that names what the file is
 * and the name to send it under. An HTML page (the other "export to Word/Excel") is one:
 * LibreOffice's HTML import fetches the page's stylesheets and images whatever the profile's
 * settings say (tested: a loopback server was asked for both), where the HTML engine's Chromium
 * fetches nothing the sandbox does not allow.
 */
export type Disguise = { filter: string } | { sendAs: string; what: string };
const HTML_PAGE: Disguise = { sendAs: 'html', what: 'a web page (HTML)' };
const WORD_DISGUISES: Record<string, Disguise> = {
  generic_HTML: HTML_PAGE,
  writer_web_HTML: HTML_PAGE,
  writer_MS_Word_2003_XML: { filter: 'MS Word 2003 XML' },
};
const EXCEL_DISGUISES: Record<string, Disguise> = {
  calc_HTML: HTML_PAGE,
  generic_HTML: HTML_PAGE,
  calc_MS_Excel_2003_XML: { filter: 'MS Excel 2003 XML' },
};

/**
 * A text file under a binary Word or Excel name (Python's `pdb.doc`; the tab- or comma-separated
 * text of a web application's "export to Excel"), read with this filter where neither the '97
 * filter nor a disguise took it. Decided by the file's own bytes (bridge.py `text_options`: no NUL,
 * no control character but tab, line ends and form feed in its head), not by LibreOffice's
 * detection, which calls random bytes text and called a tab-separated text with an "ë" in it a
 * WordPerfect document.
 */
export interface TextReading {
  filter: string;
  family: 'writer' | 'calc';
}
const WORD_TEXT: TextReading = { filter: 'Text (encoded)', family: 'writer' };
const EXCEL_TEXT: TextReading = { filter: 'Text - txt - csv (StarCalc)', family: 'calc' };

/**
 * LibreOffice's import filter for each source, always given: a file is read as what it claims to
 * be, or not at all. (Detected by content, a zip of random bytes named .docx was read as plain
 * text and "converted".) `older`: the filters of the same format's older versions, the only ones
 * LibreOffice's detection may choose instead when `filter` cannot open the file (a Word 6 .doc),
 * so that a damaged .doc is never read as plain text; `disguises` and `text`: what else a file of
 * the name may be (see Disguise, TextReading). CSV is read as UTF-8, comma-separated, double-quoted.
 */
export interface InputFilter {
  filter: string;
  options?: string;
  older?: string[];
  disguises?: Record<string, Disguise>;
  text?: TextReading;
}
export const INPUT_FILTERS: Record<string, InputFilter> = {
  docx: { filter: 'MS Word 2007 XML' },
  doc: { filter: 'MS Word 97', older: OLD_WORD, disguises: WORD_DISGUISES, text: WORD_TEXT },
  odt: { filter: 'writer8' },
  rtf: { filter: 'Rich Text Format' },
  xlsx: { filter: 'Calc MS Excel 2007 XML' },
  xls: { filter: 'MS Excel 97', older: OLD_EXCEL, disguises: EXCEL_DISGUISES, text: EXCEL_TEXT },
  ods: { filter: 'calc8' },
  csv: { filter: 'Text - txt - csv (StarCalc)', options: '44,34,76,1' },
  pptx: { filter: 'Impress MS PowerPoint 2007 XML' },
  ppt: { filter: 'MS PowerPoint 97', older: OLD_POWERPOINT },
  odp: { filter: 'impress8' },
  odg: { filter: 'draw8' },
  ott: { filter: 'writer8_template' },
  dotx: { filter: 'MS Word 2007 XML Template' },
  dot: { filter: 'MS Word 97 Vorlage', older: OLD_WORD, disguises: WORD_DISGUISES, text: WORD_TEXT },
  fodt: { filter: 'OpenDocument Text Flat XML' },
  ots: { filter: 'calc8_template' },
  xltx: { filter: 'Calc MS Excel 2007 XML Template' },
  xlt: { filter: 'MS Excel 97 Vorlage/Template', older: OLD_EXCEL, disguises: EXCEL_DISGUISES, text: EXCEL_TEXT },
  fods: { filter: 'OpenDocument Spreadsheet Flat XML' },
  otp: { filter: 'impress8_template' },
  potx: { filter: 'Impress MS PowerPoint 2007 XML Template' },
  pot: { filter: 'MS PowerPoint 97 Vorlage', older: OLD_POWERPOINT },
  fodp: { filter: 'OpenDocument Presentation Flat XML' },
  otg: { filter: 'draw8_template' },
  fodg: { filter: 'OpenDocument Drawing Flat XML' },
};

/** The kind of document LibreOffice opened, as the bridge names it. */
export type OfficeDocumentKind = 'writer' | 'calc' | 'impress' | 'draw';

/**
 * The kind of document a source opens as, told by its input filter before it is opened: for the
 * second way (second-way.ts), which names its export filter up front.
 */
export function kindOfSource(source: string): OfficeDocumentKind | undefined {
  const among = (sources: readonly string[]) => sources.includes(source);
  return among(TEXT_SOURCES) ? 'writer' : among(SHEET_SOURCES) ? 'calc' : among(SLIDE_SOURCES) ? 'impress' : among(DRAWING_SOURCES) ? 'draw' : undefined;
}

/**
 * Each kind's flat OpenDocument file (one XML file): the second way's stop on the way, where
 * what would print the server's directory is taken out (flat_file.py).
 */
export const FLAT_FORMATS: Record<OfficeDocumentKind, { extension: string; filter: string }> = {
  writer: { extension: 'fodt', filter: 'OpenDocument Text Flat XML' },
  calc: { extension: 'fods', filter: 'OpenDocument Spreadsheet Flat XML' },
  impress: { extension: 'fodp', filter: 'OpenDocument Presentation Flat XML' },
  draw: { extension: 'fodg', filter: 'OpenDocument Drawing Flat XML' },
};

/** LibreOffice's export filter for each target, by the kind of document being written. */
export const OUTPUT_FILTERS: Record<string, Partial<Record<OfficeDocumentKind, string>> & { options?: string }> = {
  pdf: { writer: 'writer_pdf_Export', calc: 'calc_pdf_Export', impress: 'impress_pdf_Export', draw: 'draw_pdf_Export' },
  docx: { writer: 'MS Word 2007 XML' },
  odt: { writer: 'writer8' },
  rtf: { writer: 'Rich Text Format' },
  // UTF-8 with LF line ends and no byte-order mark (the fifth token: LibreOffice writes one by default).
  txt: { writer: 'Text (encoded)', options: 'UTF8,LF,,,false' },
  xlsx: { calc: 'Calc MS Excel 2007 XML' },
  ods: { calc: 'calc8' },
  // Comma, double quotes only where needed (the seventh token), UTF-8, from the first line.
  csv: { calc: 'Text - txt - csv (StarCalc)', options: '44,34,76,1,,0,false,true,true' },
  html: { calc: 'HTML (StarCalc)' },
  pptx: { impress: 'Impress MS PowerPoint 2007 XML' },
  odp: { impress: 'impress8' },
  odg: { draw: 'draw8' },
  png: { draw: 'draw_png_Export' },
  svg: { draw: 'draw_svg_Export' },
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

export type OfficeFamily = 'text' | 'sheet' | 'slides' | 'drawing';

/** Options of office -> pdf, as rich as Gotenberg's LibreOffice route. */
export function pdfOptions(family: OfficeFamily): OptionDescriptor[] {
  const options: OptionDescriptor[] = [
    {
      name: 'pages', type: 'text', values: [], max: 200, pattern: '^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$', default: null,
      label: 'Pages to export, e.g. 1-3,5 (default: all)',
    },
  ];
  // A slide or a drawing has the page it was drawn on.
  if (family === 'text' || family === 'sheet') options.push(bool('landscape', false, 'Every page in landscape orientation'));
  options.push(
    bool('pdf_ua', false, 'Tagged, accessible PDF (PDF/UA)'),
    bool('export_bookmarks', true, 'Headings become PDF bookmarks'),
  );
  if (family !== 'drawing') options.push(bool('export_notes', false, family === 'slides' ? 'Speaker notes pages after the slides' : 'Comments as PDF annotations'));
  options.push(bool('export_form_fields', true, 'Form fields stay fillable'));
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
