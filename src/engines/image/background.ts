import type { ConversionOptions } from '../../model/conversion.ts';
import type { OptionDescriptor } from '../pairs.ts';

/**
 * The sixteen basic colours of CSS (and HTML 4), by name: an `enum`, which is what the spec's
 * option descriptors can say (range, number, enum, bool), rather than a free colour text.
 */
const BASIC_COLOURS: Record<string, string> = {
  white: '#ffffff', black: '#000000', silver: '#c0c0c0', gray: '#808080', red: '#ff0000', maroon: '#800000',
  yellow: '#ffff00', olive: '#808000', lime: '#00ff00', green: '#008000', aqua: '#00ffff', teal: '#008080',
  blue: '#0000ff', navy: '#000080', fuchsia: '#ff00ff', purple: '#800080',
};

/** White: what a page is, and what a transparent area becomes where a format holds no alpha. */
export const DEFAULT_BACKGROUND = 'white';

/**
 * The colour put behind transparent areas where the target holds no transparency (JPEG, BMP,
 * the Netpbm formats): without it they came out in whatever colour the transparent pixels had
 * (black, mostly), and black artwork on a transparent icon disappeared.
 */
export const BACKGROUND_OPTION: OptionDescriptor = {
  name: 'background', type: 'enum', values: Object.keys(BASIC_COLOURS), default: DEFAULT_BACKGROUND,
  label: 'Colour behind transparent areas (this format holds no transparency)',
};

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** The `background` of a conversion's options (one of the enum's names), or the default. */
export function backgroundOf(options: ConversionOptions): Rgb {
  const named = typeof options.background === 'string' ? BASIC_COLOURS[options.background] : undefined;
  const hex = parseInt((named ?? BASIC_COLOURS[DEFAULT_BACKGROUND]!).slice(1), 16);
  return { r: (hex >> 16) & 0xff, g: (hex >> 8) & 0xff, b: hex & 0xff };
}

/** The colour as ffmpeg's colour syntax writes it (`0xRRGGBB`). */
export function ffmpegColour({ r, g, b }: Rgb): string {
  return `0x${[r, g, b].map((channel) => channel.toString(16).padStart(2, '0')).join('')}`;
}
