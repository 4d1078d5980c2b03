import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionOptions } from '../../model/conversion.ts';
import { PAGE_NUMBER_DEFAULTS, STAMP_DEFAULTS, WATERMARK_DEFAULTS, type Position } from './formats.ts';

/*
 * What a pdf -> pdf's options ask to be drawn or written, told without loading pdf-lib: a merge
 * or a compression that draws nothing never loads it.
 */

const METADATA_OPTIONS = ['title', 'author', 'subject', 'keywords', 'creation_date', 'document_language'] as const;

export function asksForMetadata(options: ConversionOptions): boolean {
  return METADATA_OPTIONS.some((name) => typeof options[name] === 'string');
}

/** Where and how a mark is drawn, whatever it is. */
interface MarkLook {
  /** The option that asked for it, named in messages. */
  option: string;
  opacity: number;
  angle: number;
  position: Position;
  /** Drawn before the page's content (a watermark) rather than after it. */
  under: boolean;
}

/** A text mark as the options ask for it. */
export interface TextMark extends MarkLook {
  kind: 'text';
  /** The text of page `index` (0-based) of `total`. */
  text: (index: number, total: number) => string;
  size: number;
  colour: [number, number, number];
}

/** An image mark: a file sent with the PDF, drawn this wide (a percentage of the page's width). */
export interface ImageMark extends MarkLook {
  kind: 'image';
  path: string;
  widthPercent: number;
}

export type Mark = TextMark | ImageMark;

const textOption = (options: ConversionOptions, name: string): string | undefined => {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
};
const numberOption = (options: ConversionOptions, name: string, fallback: number): number => {
  const value = options[name];
  return typeof value === 'number' ? value : fallback;
};
const colourOf = (hex: string): [number, number, number] => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16) / 255) as [number, number, number];

/**
 * The marks the options ask for: a watermark under the content, a stamp and page numbers over
 * it. `images`: the files of image marks, by option (`watermark_image` -> its path).
 */
export function requestedMarks(options: ConversionOptions, images: Readonly<Record<string, string>> = {}): Mark[] {
  const marks: Mark[] = [];
  for (const [what, defaults, under] of [['watermark', WATERMARK_DEFAULTS, true], ['stamp', STAMP_DEFAULTS, false]] as const) {
    const look = {
      opacity: numberOption(options, `${what}_opacity`, defaults.opacity),
      angle: numberOption(options, `${what}_angle`, defaults.angle),
      position: (textOption(options, `${what}_position`) ?? defaults.position) as Position,
      under,
    };
    const imageName = textOption(options, `${what}_image`);
    if (imageName !== undefined) {
      const path = images[`${what}_image`];
      if (path === undefined) throw new ConversionFailure('conversion_failed', `${what}_image: the file ${imageName} did not reach the engine.`);
      marks.push({ kind: 'image', option: `${what}_image`, path, widthPercent: numberOption(options, `${what}_width`, defaults.width), ...look });
      continue;
    }
    const words = textOption(options, `${what}_text`);
    if (words === undefined || words.trim() === '') continue;
    marks.push({
      kind: 'text',
      option: `${what}_text`,
      text: () => words,
      size: numberOption(options, `${what}_font_size`, defaults.size),
      colour: colourOf(textOption(options, `${what}_color`) ?? defaults.colour),
      ...look,
    });
  }
  const format = textOption(options, 'page_numbers');
  if (format !== undefined) {
    const start = numberOption(options, 'page_numbers_start', PAGE_NUMBER_DEFAULTS.start);
    marks.push({
      kind: 'text',
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
