import type { FormatInfo, OptionDescriptor, VariantDescriptor } from '../pairs.ts';
import { PAGE_LIST_PATTERN as PAGE_LIST } from '../page-list.ts';

export const PDF_OPERATIONS_FORMATS: FormatInfo[] = [
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  // Declared with the same information as the data engine's.
  { key: 'json', extensions: ['json'], mime: 'application/json' },
];

/** The last step of every pdf -> pdf: how qpdf writes the file. */
export const PDF_VARIANTS: VariantDescriptor[] = [
  { key: 'compress', label: 'Smaller file: object streams, recompressed streams' },
  { key: 'linearize', label: 'Linearized for fast web view (first page shows before the download ends)' },
];

/** Where a mark goes on the page as it is shown (after its own rotation). */
export const POSITIONS = ['center', 'top-left', 'top-center', 'top-right', 'bottom-left', 'bottom-center', 'bottom-right'] as const;
export type Position = (typeof POSITIONS)[number];

export const PDFA_LEVELS = ['1b', '2b', '3b'] as const;
export const PERMISSIONS = ['all', 'print', 'none'] as const;
export const ROTATIONS = ['90', '180', '270'] as const;
export const MERGE_ORDERS = ['sent', 'name'] as const;


const COLOUR = '#[0-9a-fA-F]{6}';
/** A BCP 47 language tag, as /Lang holds it: a language, then subtags (en-US, zh-Hant-TW). */
const LANGUAGE_TAG = '[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*';
const DATE = '[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?(Z|[+-][0-9]{2}:[0-9]{2})?)?';

const text = (name: string, label: string, extra: Partial<OptionDescriptor> = {}): OptionDescriptor => ({
  name, type: 'text', values: [], max: 1000, default: null, label, ...extra,
});
const number = (name: string, min: number, max: number, label: string): OptionDescriptor => ({
  name, type: 'number', values: [], min, max, default: null, label,
});
const choice = (name: string, values: readonly string[], label: string): OptionDescriptor => ({
  name, type: 'enum', values: [...values], default: null, label,
});

/**
 * A mark's options: `what` is watermark or stamp, drawn as a text or as an image sent with the
 * PDF (`watermark_image` names its file part). Unset, each takes the default its label names.
 */
function markOptions(what: 'watermark' | 'stamp', defaults: { size: number; opacity: number; angle: number; position: Position; colour: string; width: number }): OptionDescriptor[] {
  const textOnly = [`${what}_text`];
  const either = [`${what}_text`, `${what}_image`];
  const where = what === 'watermark' ? 'under' : 'over';
  return [
    text(`${what}_text`, `Text drawn ${where} the content of every page`, { max: 200, excludes: [`${what}_image`] }),
    text(`${what}_image`, `Name of a PNG, JPEG, WebP, GIF or TIFF file sent with the PDF (another file part), drawn ${where} the content of every page`, {
      max: 255, file: true, excludes: [`${what}_text`],
    }),
    { ...number(`${what}_font_size`, 4, 400, `Font size of the ${what} text in points (default ${defaults.size})`), requires: textOnly },
    { ...number(`${what}_width`, 1, 100, `Width of the ${what} image as a percentage of the page's width (default ${defaults.width})`), requires: [`${what}_image`] },
    { ...number(`${what}_opacity`, 0, 1, `Opacity of the ${what}, 0 to 1 (default ${defaults.opacity})`), requires: either },
    { ...number(`${what}_angle`, -180, 180, `Angle of the ${what} in degrees, counter-clockwise (default ${defaults.angle})`), requires: either },
    { ...choice(`${what}_position`, POSITIONS, `Where the ${what} goes on the page (default ${defaults.position})`), requires: either },
    text(`${what}_color`, `Colour of the ${what} text as #rrggbb (default ${defaults.colour})`, { max: 7, pattern: COLOUR, requires: textOnly }),
  ];
}

export const WATERMARK_DEFAULTS = { size: 60, opacity: 0.25, angle: 45, position: 'center', colour: '#808080', width: 50 } as const;
export const STAMP_DEFAULTS = { size: 24, opacity: 1, angle: 0, position: 'top-right', colour: '#c00000', width: 20 } as const;
export const PAGE_NUMBER_DEFAULTS = { size: 10, position: 'bottom-center', start: 1 } as const;

const ENCRYPTION = ['encrypt_user_password', 'encrypt_owner_password'];

/** Password of an encrypted input: given to qpdf, never shown with the conversion. */
export const PASSWORD_OPTION: OptionDescriptor = text('password', 'Password that opens an encrypted input', { max: 256, secret: true });

/**
 * pdf -> pdf. Every option is off unless given; the steps run in this fixed order whatever the
 * order they were sent in: merge (several files), open (password), pages, rotate, flatten, watermark, stamp, page
 * numbers, metadata, PDF/A or PDF/UA, then encryption with the variant's compression or
 * linearisation, and last the split into parts (a zip of PDFs when there are several).
 */
export function operationOptions(pdfa: boolean): OptionDescriptor[] {
  return [
    choice('merge_order', MERGE_ORDERS, 'Several files sent: merged in the order sent (default) or by name'),
    PASSWORD_OPTION,
    text('pages', 'Pages to keep, in this order: 1-3,5 keeps four; 3,1-2 puts page 3 first', { max: 1000, pattern: PAGE_LIST }),
    choice('rotate', ROTATIONS, 'Turn pages clockwise by this many degrees'),
    text('rotate_pages', 'Pages to turn, e.g. 1,3-4 (default: all)', { max: 1000, pattern: PAGE_LIST, requires: ['rotate'] }),
    { name: 'flatten', type: 'bool', values: [], default: null, label: 'Draw form fields and annotations into the page; no fields are left to fill' },
    ...markOptions('watermark', WATERMARK_DEFAULTS),
    ...markOptions('stamp', STAMP_DEFAULTS),
    text('page_numbers', 'Number the pages with this text: {n} is the page number, {total} the count, e.g. "{n} / {total}"', { max: 100, pattern: '.*\\{n\\}.*' }),
    { ...choice('page_numbers_position', POSITIONS.filter((p) => p !== 'center'), `Where the page numbers go (default ${PAGE_NUMBER_DEFAULTS.position})`), requires: ['page_numbers'] },
    { name: 'page_numbers_start', type: 'range', values: [], min: 0, max: 1_000_000, default: null, label: `Number of the first page (default ${PAGE_NUMBER_DEFAULTS.start})`, requires: ['page_numbers'] },
    { ...number('page_numbers_font_size', 4, 72, `Font size of the page numbers in points (default ${PAGE_NUMBER_DEFAULTS.size})`), requires: ['page_numbers'] },
    text('title', 'Document title'),
    text('author', 'Document author'),
    text('subject', 'Document subject'),
    text('keywords', 'Document keywords, separated by commas'),
    text('creation_date', 'Creation date, YYYY-MM-DD or an ISO 8601 date and time', { max: 30, pattern: DATE }),
    text('document_language', 'Language of the document\'s text, as a BCP 47 tag such as en-US or de', { max: 35, pattern: LANGUAGE_TAG }),
    ...(pdfa ? [{ ...choice('pdfa', PDFA_LEVELS, 'Make an archival PDF/A of this level (Ghostscript); not with encryption'), excludes: ENCRYPTION }] : []),
    {
      name: 'pdfua', type: 'bool', values: [], default: null, excludes: [...(pdfa ? ['pdfa'] : []), 'flatten', 'pages', 'split_every', 'split_ranges'],
      label: 'Make a tagged PDF an accessible PDF/UA-1: its tags kept, its title shown, checked for a title, a language and embedded fonts (a PDF without tags is refused)',
    },
    text('encrypt_user_password', 'Encrypt (AES-256): the password that opens the result', { max: 127, secret: true, excludes: ['pdfa'] }),
    text('encrypt_owner_password', 'Encrypt (AES-256): the password that lifts the permissions (default: a random one)', { max: 127, secret: true, excludes: ['pdfa'] }),
    { ...choice('permissions', PERMISSIONS, 'What an encrypted result allows without the owner password: all, print (print only), none (default all)'), requires: ENCRYPTION },
    {
      name: 'split_every', type: 'range', values: [], min: 1, max: 100_000, default: null, excludes: ['split_ranges'],
      label: 'Split into parts of this many pages, as a zip of PDFs (one part: the PDF itself)',
    },
    text('split_ranges', 'Split into these parts, e.g. 1-3,4-9,10: a zip of one PDF each (one part: the PDF itself)', { max: 1000, pattern: PAGE_LIST, excludes: ['split_every'] }),
  ];
}
