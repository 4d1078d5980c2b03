import type { OptionDescriptor } from '../../formats/types.ts';
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

const LOSSY_TARGETS: ReadonlySet<ImageTarget> = new Set(['jpg', 'webp', 'avif']);

/** Lossless targets (png, gif, tiff with LZW) have no quality setting. */
export function imageOptions(target: ImageTarget): OptionDescriptor[] {
  return LOSSY_TARGETS.has(target) ? [quality, ...common] : [...common];
}
