import type { FormatInfo } from '../pairs.ts';

export const IMAGE_FORMATS: FormatInfo[] = [
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'webp', extensions: ['webp'], mime: 'image/webp' },
  { key: 'avif', extensions: ['avif'], mime: 'image/avif' },
  { key: 'gif', extensions: ['gif'], mime: 'image/gif' },
  { key: 'tiff', extensions: ['tiff', 'tif'], mime: 'image/tiff' },
  { key: 'svg', extensions: ['svg'], mime: 'image/svg+xml' },
  { key: 'heif', extensions: ['heif', 'heic'], mime: 'image/heif' },
  // Gzip-compressed SVG: libvips' SVG loader reads it as it is.
  { key: 'svgz', extensions: ['svgz'], mime: 'image/svg+xml' },
  // X PixMap: decoded here (xpm.ts), libvips does not read it.
  { key: 'xpm', extensions: ['xpm'], mime: 'image/x-xpixmap' },
];

export const IMAGE_TARGETS = ['jpg', 'png', 'webp', 'avif', 'gif', 'tiff'] as const;
export type ImageTarget = (typeof IMAGE_TARGETS)[number];

