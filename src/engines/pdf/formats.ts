import type { FormatInfo, OptionDescriptor, VariantDescriptor } from '../pairs.ts';

/**
 * Image sources: JPEG and PNG are embedded as they are; the others are re-encoded by sharp first
 * (SVG drawn at up to 300 dpi: a page of pixels, not of vectors).
 */
export const IMAGE_SOURCES = ['jpg', 'png', 'webp', 'gif', 'tiff', 'avif', 'svg', 'svgz'] as const;

export const PDF_FORMATS: FormatInfo[] = [
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
  // The image engine's formats, declared with the same information.
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'webp', extensions: ['webp'], mime: 'image/webp' },
  { key: 'gif', extensions: ['gif'], mime: 'image/gif' },
  { key: 'tiff', extensions: ['tiff', 'tif'], mime: 'image/tiff' },
  { key: 'avif', extensions: ['avif'], mime: 'image/avif' },
  { key: 'svg', extensions: ['svg'], mime: 'image/svg+xml' },
  { key: 'svgz', extensions: ['svgz'], mime: 'image/svg+xml' },
];

/** The font text is set in, shipped with the project (npm package dejavu-fonts-ttf): monospace, as text files expect. */
export const TEXT_FONT_NAME = 'DejaVu Sans Mono';
export const TEXT_FONT_FILE = 'dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf';

/** Page sizes in PDF points (1/72 inch). */
export const PAGE_SIZES = {
  a4: [595.28, 841.89],
  letter: [612, 792],
} as const;
export type PageSize = keyof typeof PAGE_SIZES;

const margin = (defaultPoints: number): OptionDescriptor => ({
  name: 'margin', type: 'number', values: [], min: 0, max: 144, default: defaultPoints,
  label: 'Margin around the content in points (72 points = 1 inch)',
});

export const IMAGE_VARIANTS: VariantDescriptor[] = [
  { key: 'fit', label: 'Page the size of the image' },
  { key: 'a4', label: 'A4 pages, image scaled down to fit' },
  { key: 'letter', label: 'US Letter pages, image scaled down to fit' },
];
export const IMAGE_OPTIONS: OptionDescriptor[] = [margin(0)];

export const TEXT_VARIANTS: VariantDescriptor[] = [
  { key: 'a4', label: 'A4 pages' },
  { key: 'letter', label: 'US Letter pages' },
];
export const TEXT_OPTIONS: OptionDescriptor[] = [
  margin(56),
  { name: 'font_size', type: 'number', values: [], min: 6, max: 36, default: 10, label: 'Font size in points' },
];
