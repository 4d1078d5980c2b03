import { PAGE_LIST_PATTERN } from '../page-list.ts';
import type { FormatInfo, OptionDescriptor } from '../pairs.ts';

/** Targets a PDF page renders to. */
export const IMAGE_TARGETS = ['png', 'jpg', 'webp'] as const;
export type ImageTarget = (typeof IMAGE_TARGETS)[number];

export const PDF_PAGES_FORMATS: FormatInfo[] = [
  // Declared with the same information as the pdf and image engines.
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'webp', extensions: ['webp'], mime: 'image/webp' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
];

export const DEFAULT_DPI = 150;
/** The image engine's largest width. */
export const MAX_WIDTH = 16384;
/** Largest side of each target: WebP's format limit, JPEG's 16-bit dimensions; PNG has none below the pixel limit. */
export const MAX_SIDE: Record<ImageTarget, number> = { png: Number.POSITIVE_INFINITY, jpg: 65535, webp: 16383 };

const page: OptionDescriptor = {
  name: 'page', type: 'range', values: [], min: 1, max: 1_000_000, default: 1, label: 'Page to render (1 is the first)',
};
const dpi: OptionDescriptor = {
  name: 'dpi', type: 'range', values: [], min: 36, max: 600, default: DEFAULT_DPI, label: 'Resolution in pixels per inch (not used when width is given)',
};
const width: OptionDescriptor = {
  name: 'width', type: 'range', values: [], min: 1, max: MAX_WIDTH, default: null, label: 'Width in pixels, height in proportion (wins over dpi)',
};
const quality: OptionDescriptor = {
  name: 'quality', type: 'range', values: [], min: 1, max: 100, default: 80, label: 'Quality',
};

/** The most pages one conversion renders into a zip. */
export const MAX_ARCHIVE_PAGES = 1000;
const pages: OptionDescriptor = {
  name: 'pages', type: 'text', values: [], max: 1000, pattern: `all|${PAGE_LIST_PATTERN}`, default: null, excludes: ['page'],
  label: `Several pages, as a zip of images: all, or a list such as 1-3,5 (at most ${MAX_ARCHIVE_PAGES})`,
};

/** Options of pdf -> `target`: the page (or pages) and its size; quality for the lossy targets. */
export function pageOptions(target: ImageTarget): OptionDescriptor[] {
  return target === 'png' ? [page, pages, dpi, width] : [page, pages, dpi, width, quality];
}
