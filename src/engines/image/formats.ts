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


/**
 * Sources whose runs need no directory with the user's file name (Engine.readsAnyNameOf): the
 * raster formats, found by libvips from their bytes and holding nothing that points at another
 * file. Not SVG: librsvg draws an `<image href="...">` from the file's own folder, and beside a
 * stored input are every other conversion's.
 */
export const ANY_NAME_SOURCES: readonly string[] = ['png', 'jpg', 'webp', 'gif', 'tiff', 'avif', 'heif', 'xpm'];

/**
 * Sources sharp reads from memory as it reads them from a file (libvips finds the format from
 * the bytes): a small one comes in the record as bytes (Engine.readsBytesOf). Not XPM (decoded
 * here from text), not HEIF or AVIF (an HEVC photo goes through a decoder that reads a file),
 * not SVG (librsvg resolves what it references from a file's place).
 */
export const BYTES_SOURCES: readonly string[] = ['png', 'jpg', 'webp', 'gif', 'tiff'];
