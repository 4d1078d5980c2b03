import type { FormatInfo, OptionDescriptor } from '../pairs.ts';

/**
 * Still-image formats libvips (as sharp ships it) does not read or write: BMP, ICO and the
 * Netpbm family. ffmpeg's image decoders and encoders convert them to and from PNG; the image
 * engine does the rest (the registry chains through PNG, a lossless step).
 */
export const RASTER_FORMATS: FormatInfo[] = [
  { key: 'bmp', extensions: ['bmp', 'dib'], mime: 'image/bmp' },
  { key: 'ico', extensions: ['ico'], mime: 'image/vnd.microsoft.icon' },
  { key: 'ppm', extensions: ['ppm', 'pnm'], mime: 'image/x-portable-pixmap' },
  { key: 'pgm', extensions: ['pgm'], mime: 'image/x-portable-graymap' },
  { key: 'pbm', extensions: ['pbm'], mime: 'image/x-portable-bitmap' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
];

export type RasterFormat = 'bmp' | 'ico' | 'ppm' | 'pgm' | 'pbm';
export const RASTER_KEYS: readonly RasterFormat[] = ['bmp', 'ico', 'ppm', 'pgm', 'pbm'];

/**
 * The one demuxer ffmpeg may open each source with (-f and -format_whitelist): no probing by
 * content, so nothing but an image decoder ever reads the file.
 */
export const SOURCE_DEMUXER: Record<RasterFormat | 'png', string> = {
  bmp: 'bmp_pipe', ico: 'ico', ppm: 'ppm_pipe', pgm: 'pgm_pipe', pbm: 'pbm_pipe', png: 'png_pipe',
};

/**
 * Encoder, pixel format and muxer of each target. `opaque`: the target holds no transparency (a
 * 32-bit BMP's alpha is ignored by most readers), so the image is put on its `background` first.
 */
export const TARGET_ENCODING: Record<RasterFormat, { codec: string; pixelFormat?: string; muxer: string; opaque?: true }> = {
  bmp: { codec: 'bmp', pixelFormat: 'bgr24', muxer: 'image2', opaque: true },
  // PNG inside the icon: what every browser and Windows since Vista read, alpha included.
  ico: { codec: 'png', pixelFormat: 'rgba', muxer: 'ico' },
  ppm: { codec: 'ppm', pixelFormat: 'rgb24', muxer: 'image2', opaque: true },
  pgm: { codec: 'pgm', pixelFormat: 'gray', muxer: 'image2', opaque: true },
  pbm: { codec: 'pbm', pixelFormat: 'monob', muxer: 'image2', opaque: true },
};

/** An icon is at most 256 pixels a side (the ICO directory stores a side in one byte). */
export const ICON_MAX_SIDE = 256;

export const ICON_OPTIONS: OptionDescriptor[] = [
  {
    name: 'size', type: 'number', values: [], min: 16, max: ICON_MAX_SIDE, default: null,
    label: 'Longest side of the icon in pixels (default: the image\'s own, at most 256)',
  },
];
