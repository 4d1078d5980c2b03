import type { ConversionOptions } from '../../model/conversion.ts';
import { COLOUR_PATTERN } from '../../formats/options.ts';
import type { OptionDescriptor } from '../../formats/types.ts';

/** White: what a page is, and what a transparent area becomes where a format holds no alpha. */
export const DEFAULT_BACKGROUND = '#ffffff';

/**
 * The colour put behind transparent areas where the target holds no transparency (JPEG, BMP,
 * the Netpbm formats): without it they came out in whatever colour the transparent pixels had
 * (black, mostly), and black artwork on a transparent icon disappeared.
 */
export const BACKGROUND_OPTION: OptionDescriptor = {
  name: 'background', type: 'text', values: [], pattern: COLOUR_PATTERN, default: DEFAULT_BACKGROUND,
  label: 'Colour behind transparent areas, #rrggbb (this format holds no transparency)',
};

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** The `background` of a conversion's options (checked against COLOUR_PATTERN), or the fallback. */
export function backgroundOf(options: ConversionOptions, fallback: string | null = DEFAULT_BACKGROUND): Rgb | null {
  const value = typeof options.background === 'string' && new RegExp(COLOUR_PATTERN).test(options.background) ? options.background : fallback;
  if (value === null) return null;
  const hex = parseInt(value.slice(1), 16);
  return { r: (hex >> 16) & 0xff, g: (hex >> 8) & 0xff, b: hex & 0xff };
}

/** The colour as ffmpeg's colour syntax writes it (`0xRRGGBB`). */
export function ffmpegColour({ r, g, b }: Rgb): string {
  return `0x${[r, g, b].map((channel) => channel.toString(16).padStart(2, '0')).join('')}`;
}
