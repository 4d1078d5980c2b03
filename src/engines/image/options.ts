import type { OptionDescriptor } from '../pairs.ts';
import { BACKGROUND_OPTION } from './background.ts';
import type { ImageTarget } from './formats.ts';

const MAX_DIMENSION = 16384;

const common: OptionDescriptor[] = [
  { name: 'width', type: 'number', values: [], min: 1, max: MAX_DIMENSION, default: null, label: 'Width in pixels' },
  { name: 'height', type: 'number', values: [], min: 1, max: MAX_DIMENSION, default: null, label: 'Height in pixels' },
  {
    name: 'fit', type: 'enum', values: ['inside', 'cover', 'contain', 'fill', 'outside'], default: 'inside',
    label: 'How the image fits width and height',
  },
  { name: 'strip', type: 'bool', values: [], default: true, label: 'Remove metadata (EXIF, ICC, XMP)' },
];

const quality: OptionDescriptor = {
  name: 'quality', type: 'range', values: [], min: 1, max: 100, default: 80, label: 'Quality',
};

const page: OptionDescriptor = {
  name: 'page', type: 'number', values: [], min: 1, max: 100_000, default: null,
  label: 'Only this page (frame) of a multi-page input, 1 the first (default: every page where the target holds pages, else the first)',
};

const LOSSY_TARGETS: ReadonlySet<ImageTarget> = new Set(['jpg', 'webp', 'avif']);
/** Sources that may hold several pages or frames (a multi-page TIFF, an animated GIF or WebP). */
export const MULTI_PAGE_SOURCES: ReadonlySet<string> = new Set(['tiff', 'gif', 'webp']);
/** Targets that hold several pages or frames. */
export const MULTI_PAGE_TARGETS: ReadonlySet<string> = new Set(['tiff', 'gif', 'webp']);

/** Targets that hold no transparency: what is transparent is put on a `background`. */
export const OPAQUE_TARGETS: ReadonlySet<ImageTarget> = new Set(['jpg']);

/**
 * Lossless targets (png, gif, tiff with LZW) have no quality setting; multi-page sources have
 * `page`; targets without transparency a `background`.
 */
export function imageOptions(source: string, target: ImageTarget): OptionDescriptor[] {
  const options = LOSSY_TARGETS.has(target) ? [quality, ...common] : [...common];
  if (OPAQUE_TARGETS.has(target)) options.push(BACKGROUND_OPTION);
  return MULTI_PAGE_SOURCES.has(source) ? [...options, page] : options;
}
