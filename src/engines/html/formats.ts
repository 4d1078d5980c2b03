import type { FormatInfo, OptionDescriptor, VariantDescriptor } from '../pairs.ts';

export const HTML_FORMATS: FormatInfo[] = [
  { key: 'html', extensions: ['html', 'htm', 'xhtml'], mime: 'text/html' },
  // A web page with its files: index.html at the top (or in the one folder) and what it loads.
  { key: 'zip', extensions: ['zip'], mime: 'application/zip' },
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'webp', extensions: ['webp'], mime: 'image/webp' },
];

export const HTML_SOURCES = ['html', 'zip'] as const;
export const HTML_TARGETS = ['pdf', 'png', 'jpg', 'webp'] as const;
export type HtmlTarget = (typeof HTML_TARGETS)[number];

/** Paper sizes in millimetres (width x height, portrait). */
export const PAPERS: Record<string, [number, number]> = {
  a4: [210, 297], letter: [215.9, 279.4], legal: [215.9, 355.6], a3: [297, 420], a5: [148, 210], tabloid: [279.4, 431.8],
};

/** At most this long a wait, whatever is asked: the time limit of the whole conversion is larger. */
export const MAX_WAIT_DELAY_S = 30;
/** The browser window a page is laid out in, unless a screenshot asks for another. */
export const WINDOW = { width: 1280, height: 800 } as const;
/** A screenshot's sides: Chromium draws at most 16,384 pixels a side. */
export const MAX_SHOT_SIDE = 16_384;
/** WebP holds at most 16,383 pixels a side. */
const MAX_WEBP_SIDE = 16_383;

/** The longest side a picture of `target` may have: a full page is cut there. */
export function maxShotSide(target: HtmlTarget): number {
  return target === 'webp' ? MAX_WEBP_SIDE : MAX_SHOT_SIDE;
}

const bool = (name: string, value: boolean, label: string): OptionDescriptor => ({ name, type: 'bool', values: [], default: value, label });
const mm = (name: string, value: number | null, min: number, max: number, label: string): OptionDescriptor => ({ name, type: 'number', values: [], min, max, default: value, label });

/** What every page load takes: when it is done, and which CSS media it is laid out for. */
const LOADING: OptionDescriptor[] = [
  { name: 'media', type: 'enum', values: ['print', 'screen'], default: null, label: 'CSS media the page is laid out for (default print for PDF, screen for images)' },
  { name: 'wait_delay', type: 'number', values: [], min: 0, max: MAX_WAIT_DELAY_S, default: 0, label: 'Seconds to wait after the page has loaded (for scripts that draw late)' },
  {
    name: 'wait_for_selector', type: 'text', values: [], max: 256, pattern: '^[^\\u0000-\\u001f]+$', default: null,
    label: 'Wait until an element matching this CSS selector is in the page (within the time limit)',
  },
];

/** Offered only where the daemon allows it (html_remote_resources). */
export const REMOTE_OPTION: OptionDescriptor = bool('allow_remote_resources', false, 'Let the page load public http(s) resources (fonts, images, styles); every request, redirects included, checked against the address policy of URL inputs');

export const PDF_OPTIONS: OptionDescriptor[] = [
  { name: 'paper', type: 'enum', values: Object.keys(PAPERS), default: 'a4', label: 'Paper size (paper_width and paper_height win when given)' },
  mm('paper_width', null, 10, 2000, 'Paper width in millimetres (with paper_height)'),
  mm('paper_height', null, 10, 2000, 'Paper height in millimetres (with paper_width)'),
  mm('margin_top', 10, 0, 200, 'Top margin in millimetres'),
  mm('margin_right', 10, 0, 200, 'Right margin in millimetres'),
  mm('margin_bottom', 10, 0, 200, 'Bottom margin in millimetres'),
  mm('margin_left', 10, 0, 200, 'Left margin in millimetres'),
  bool('landscape', false, 'Landscape pages'),
  { name: 'scale', type: 'number', values: [], min: 0.1, max: 2, default: 1, label: 'Scale of the page\'s rendering (0.1 to 2)' },
  bool('print_background', true, 'Print background colours and images'),
  bool('prefer_css_page_size', false, 'A page size in the page\'s CSS (@page size) wins over paper'),
  { name: 'page_ranges', type: 'text', values: [], max: 200, pattern: '^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$', default: null, label: 'Pages to keep, e.g. 1-3,5 (default all)' },
  {
    name: 'header_html', type: 'text', values: [], max: 16_384, default: null,
    label: 'HTML of every page\'s header: <span class="pageNumber"></span>, totalPages, title, date and url are filled in; inline styles only, nothing loaded',
  },
  { name: 'footer_html', type: 'text', values: [], max: 16_384, default: null, label: 'HTML of every page\'s footer, as header_html' },
  bool('export_bookmarks', false, 'Headings become the PDF\'s bookmarks (outline)'),
  bool('omit_background', false, 'No white page behind the content (transparent where the page draws nothing)'),
  ...LOADING,
];

export function imageOptions(target: HtmlTarget): OptionDescriptor[] {
  return [
    mm('width', WINDOW.width, 16, 4096, 'Width of the browser window in pixels'),
    mm('height', WINDOW.height, 16, maxShotSide(target), 'Height of the browser window in pixels (the picture\'s, unless full_page)'),
    bool('full_page', true, `The whole page, however long (cut at ${maxShotSide(target).toLocaleString('en-US')} pixels), not only the window`),
    ...(target === 'jpg' || target === 'webp' ? [{ name: 'quality', type: 'range' as const, values: [], min: 1, max: 100, default: 80, label: 'Quality' }] : []),
    ...(target === 'jpg' ? [] : [bool('omit_background', false, 'Transparent where the page draws no background')]),
    ...LOADING,
  ];
}

export const PDF_VARIANTS: VariantDescriptor[] = [
  // Said here, where a client looks for it: there is no PDF/A variant because Chromium cannot make one.
  { key: 'pdf', label: 'PDF as Chromium prints it, tagged (Chromium cannot produce PDF/A: convert a document through LibreOffice for that)' },
];
