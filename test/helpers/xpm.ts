/**
 * XPM files written by hand, as the X tools and Debian's /usr/share/pixmaps have them: a C array
 * of strings (header, one line per colour, one per row of pixels).
 */

/**
 * An XPM 3 file of `width` x `height` pixels: `colours` maps each pixel's characters (all of one
 * length) to its colour line's definition (`c #C88C3C`, `c SteelBlue`, `c None`), `pixel` says
 * which characters a pixel has.
 */
export function xpmText(width: number, height: number, colours: Record<string, string>, pixel: (x: number, y: number) => string): string {
  const codes = Object.keys(colours);
  const perPixel = codes[0]!.length;
  const rows = Array.from({ length: height }, (_, y) => Array.from({ length: width }, (_, x) => pixel(x, y)).join(''));
  const lines = [
    `${width} ${height} ${codes.length} ${perPixel}`,
    ...codes.map((code) => `${code} ${colours[code]}`),
    ...rows,
  ];
  return `/* XPM */\nstatic char * fixture_xpm[] = {\n/* columns rows colors chars-per-pixel */\n${lines.map((line) => `"${line}"`).join(',\n')}\n};\n`;
}

/**
 * The pairs suites' XPM: the left half the colour of their other image fixtures (#C88C3C), the
 * right half an X11 colour name (SteelBlue, #4682B4).
 */
export function fixtureXpm(width: number, height: number): string {
  return xpmText(width, height, { '.': 'c #C88C3C', '#': 's right c SteelBlue' }, (x) => (x < width / 2 ? '.' : '#'));
}
