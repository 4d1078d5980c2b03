import { ConversionFailure } from '../../errors/api-error.ts';

/** An image's size as its header states it; unknown when the header could not be read. */
export interface StatedSize {
  width?: number | undefined;
  height?: number | undefined;
}

/**
 * The failure of an image over the pixel limit, in words and in `details`: its size and the limit,
 * and, when a resize was asked for, that it cannot help (the image would be decoded whole first).
 * Shared by every engine that decodes images (libvips, ffmpeg, libheif).
 */
export function pixelLimitFailure(size: StatedSize | null, limit: number | false | undefined, resized: boolean): ConversionFailure {
  const width = size?.width;
  const height = size?.height;
  const format = (n: number) => n.toLocaleString('en-US');
  const max = typeof limit === 'number' ? limit : 0;
  const stated = width && height ? `${format(width)} x ${format(height)} pixels (${format(width * height)})` : 'larger than the limit';
  const message = `The image is ${stated}; images of at most ${format(max)} pixels are converted here`
    + (resized ? ': it is too large to decode at all, so it cannot be resized either.' : '.');
  return new ConversionFailure('input_invalid', message, {
    ...(width && height ? { width, height, pixels: width * height } : {}),
    limit: max,
  });
}

/** Whether the job asked for a resize (the image engine's width/height options). */
export function asksForResize(options: Readonly<Record<string, unknown>>): boolean {
  return options.width !== undefined || options.height !== undefined;
}
