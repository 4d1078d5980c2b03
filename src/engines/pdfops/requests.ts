import type { ConversionOptions } from '../../model/conversion.ts';
import { PAGE_NUMBER_DEFAULTS, STAMP_DEFAULTS, WATERMARK_DEFAULTS, type Position } from './formats.ts';

/*
 * What a pdf -> pdf's options ask to be drawn or written, told without loading pdf-lib: a merge
 * or a compression that draws nothing never loads it.
 */

const METADATA_OPTIONS = ['title', 'author', 'subject', 'keywords', 'creation_date'] as const;

export function asksForMetadata(options: ConversionOptions): boolean {
  return METADATA_OPTIONS.some((name) => typeof options[name] === 'string');
}

/** One text mark as the options ask for it. */
export interface TextMark {
  option: string;
  /** The text of page `index` (0-based) of `total`. */
  text: (index: number, total: number) => string;
  size: number;
  opacity: number;
  angle: number;
  position: Position;
  colour: [number, number, number];
  under: boolean;
}

const textOption = (options: ConversionOptions, name: string): string | undefined => {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
};
const numberOption = (options: ConversionOptions, name: string, fallback: number): number => {
  const value = options[name];
  return typeof value === 'number' ? value : fallback;
};
const colourOf = (hex: string): [number, number, number] => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16) / 255) as [number, number, number];

/** The marks the options ask for: a watermark under the content, a stamp and page numbers over it. */
export function requestedMarks(options: ConversionOptions): TextMark[] {
  const marks: TextMark[] = [];
  for (const [what, defaults, under] of [['watermark', WATERMARK_DEFAULTS, true], ['stamp', STAMP_DEFAULTS, false]] as const) {
    const words = textOption(options, `${what}_text`);
    if (words === undefined || words.trim() === '') continue;
    marks.push({
      option: `${what}_text`,
      text: () => words,
      size: numberOption(options, `${what}_font_size`, defaults.size),
      opacity: numberOption(options, `${what}_opacity`, defaults.opacity),
      angle: numberOption(options, `${what}_angle`, defaults.angle),
      position: (textOption(options, `${what}_position`) ?? defaults.position) as Position,
      colour: colourOf(textOption(options, `${what}_color`) ?? defaults.colour),
      under,
    });
  }
  const format = textOption(options, 'page_numbers');
  if (format !== undefined) {
    const start = numberOption(options, 'page_numbers_start', PAGE_NUMBER_DEFAULTS.start);
    marks.push({
      option: 'page_numbers',
      text: (index, total) => format.replaceAll('{n}', String(start + index)).replaceAll('{total}', String(start + total - 1)),
      size: numberOption(options, 'page_numbers_font_size', PAGE_NUMBER_DEFAULTS.size),
      opacity: 1,
      angle: 0,
      position: (textOption(options, 'page_numbers_position') ?? PAGE_NUMBER_DEFAULTS.position) as Position,
      colour: [0, 0, 0],
      under: false,
    });
  }
  return marks;
}

