import { ConversionFailure } from '../../errors/api-error.ts';
import { pixelLimitFailure } from './pixel-limit.ts';
import { x11Colour } from './x11-colours.ts';

/** An XPM's pixels, four bytes (RGBA) each, row by row. */
export interface DecodedXpm {
  width: number;
  height: number;
  pixels: Buffer;
}

export interface XpmLimits {
  /** Images with more pixels fail before any pixel is decoded; 0 or false: no limit. */
  maxInputPixels: number | false;
  /** Whether the conversion asked for a resize (the pixel limit's message says it cannot help). */
  resized: boolean;
  signal: AbortSignal;
}

/** Rows decoded between two turns of the event loop: an XPM is decoded here, in JavaScript. */
const ROWS_PER_TURN = 64;
/** Keys of a colour line, in the order of preference: colour, grey, four-level grey, mono. */
const COLOUR_KEYS = ['c', 'g', 'g4', 'm'] as const;
const ALL_KEYS = new Set(['c', 'g', 'g4', 'm', 's']);
const TRANSPARENT = 0x00000000;

function invalid(reason: string): ConversionFailure {
  return new ConversionFailure('input_invalid', `The input cannot be decoded as xpm: ${reason}.`);
}

/**
 * The strings of an XPM: the C string literals of an XPM 3 file (`/* XPM *\/ static char *x[] =
 * {"..."}`), comments skipped; or the lines of an XPM 2 file (`! XPM2`).
 */
export function xpmStrings(text: string): string[] {
  if (/^! XPM2\b/.test(text)) return text.split(/\r?\n/).slice(1).filter((line) => line !== '');
  if (!/^\s*\/\*\s*XPM\s*\*\//.test(text)) throw invalid('it does not start with the /* XPM */ comment');
  const strings: string[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at];
    if (char === '/' && text[at + 1] === '*') {
      const end = text.indexOf('*/', at + 2);
      at = end < 0 ? text.length : end + 2;
    } else if (char === '"') {
      let value = '';
      let from = at + 1;
      for (;;) {
        const quote = text.indexOf('"', from);
        if (quote < 0) throw invalid('a string is not closed');
        const slash = text.indexOf('\\', from);
        if (slash >= 0 && slash < quote) {
          value += text.slice(from, slash) + (text[slash + 1] ?? '');
          from = slash + 2;
          continue;
        }
        value += text.slice(from, quote);
        at = quote + 1;
        break;
      }
      strings.push(value);
    } else {
      at++;
    }
  }
  return strings;
}

/** A colour of an XPM colour line as 0xRRGGBBAA, or undefined if it names none this knows. */
function colourValue(spec: string): number | undefined {
  if (/^none$/i.test(spec)) return TRANSPARENT;
  const hex = /^#([0-9a-f]+)$/i.exec(spec)?.[1];
  if (hex !== undefined) {
    // #rgb, #rrggbb, #rrrgggbbb, #rrrrggggbbbb: the high byte of each channel.
    if (hex.length % 3 !== 0 || hex.length > 12) return undefined;
    const digits = hex.length / 3;
    const channel = (index: number) => {
      const value = parseInt(hex.slice(index * digits, (index + 1) * digits), 16);
      return digits === 1 ? value * 17 : value >> (4 * (digits - 2));
    };
    return ((channel(0) << 24) | (channel(1) << 16) | (channel(2) << 8) | 0xff) >>> 0;
  }
  const named = x11Colour(spec);
  return named === undefined ? undefined : ((parseInt(named, 16) << 8) | 0xff) >>> 0;
}

/** The colour a colour line gives its pixel (`.. c #ff0000 s red`): the first of c, g, g4, m. */
function lineColour(definition: string): number {
  const values = new Map<string, string>();
  let key: string | undefined;
  for (const word of definition.trim().split(/\s+/)) {
    // A key where a key can start; else a word of the value (X11 names may have spaces).
    if (ALL_KEYS.has(word) && (key === undefined || values.get(key) !== '')) {
      key = word;
      values.set(key, '');
    } else if (key !== undefined) {
      values.set(key, values.get(key) === '' ? word : `${values.get(key)} ${word}`);
    }
  }
  for (const wanted of COLOUR_KEYS) {
    const spec = values.get(wanted);
    if (spec === undefined || spec === '') continue;
    const colour = colourValue(spec);
    if (colour === undefined) throw invalid(`it names a colour this server does not know: "${spec.slice(0, 40)}"`);
    return colour;
  }
  throw invalid(`a colour line gives no colour: "${definition.trim().slice(0, 40)}"`);
}

function positive(word: string | undefined, what: string): number {
  const value = Number(word);
  if (!Number.isSafeInteger(value) || value < 1) throw invalid(`its header gives no ${what}`);
  return value;
}

/**
 * Decodes an XPM (X PixMap: icons as C source, as Debian's /usr/share/pixmaps holds them), which
 * libvips does not read. The pixel limit is checked from the header before any pixel is decoded;
 * the rows are decoded a few at a time, letting the event loop turn between them.
 */
export async function decodeXpm(text: string, limits: XpmLimits): Promise<DecodedXpm> {
  const strings = xpmStrings(text);
  const header = (strings[0] ?? '').trim().split(/\s+/);
  const width = positive(header[0], 'width');
  const height = positive(header[1], 'height');
  const colourCount = positive(header[2], 'number of colours');
  const perPixel = positive(header[3], 'number of characters per pixel');
  if (limits.maxInputPixels && width * height > limits.maxInputPixels) {
    throw pixelLimitFailure({ width, height }, limits.maxInputPixels, limits.resized);
  }
  if (strings.length < 1 + colourCount + height) {
    throw invalid(`it holds ${strings.length - 1} lines of colours and pixels, its header says ${colourCount + height}`);
  }
  const colours = new Map<string, number>();
  for (const line of strings.slice(1, 1 + colourCount)) {
    if (line.length < perPixel) throw invalid('a colour line is shorter than a pixel');
    colours.set(line.slice(0, perPixel), lineColour(line.slice(perPixel)));
  }
  // Every row is there and long enough before the pixels are allocated: a header cannot make
  // this allocate more than the file holds.
  const rows = strings.slice(1 + colourCount, 1 + colourCount + height);
  const rowLength = width * perPixel;
  const short = rows.findIndex((row) => row.length < rowLength);
  if (short >= 0) throw invalid(`row ${short + 1} holds ${Math.floor(rows[short]!.length / perPixel)} pixels, the header says ${width}`);
  const pixels = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    if (y % ROWS_PER_TURN === 0 && y > 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      limits.signal.throwIfAborted();
    }
    const row = rows[y]!;
    for (let x = 0; x < width; x++) {
      const code = perPixel === 1 ? row[x]! : row.slice(x * perPixel, (x + 1) * perPixel);
      const colour = colours.get(code);
      if (colour === undefined) throw invalid(`pixel ${x + 1} of row ${y + 1} has a colour the file does not define`);
      pixels.writeUInt32BE(colour, (y * width + x) * 4);
    }
  }
  return { width, height, pixels };
}
