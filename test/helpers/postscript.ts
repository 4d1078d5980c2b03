/**
 * PostScript fixtures written by hand (no tool under test makes them): an EPS drawing with a
 * bounding box, a two-page PS document, and a legacy (PostScript) Illustrator file, each showing
 * the documents' marker in Helvetica; and hostile programs for the Ghostscript engine.
 */
import { OFFICE_MARKER } from './office.ts';

/** The EPS's bounding box in points: its PDF page is exactly this size (-dEPSCrop). */
export const EPS_BOX = { width: 400, height: 300 } as const;
export const PS_PAGES = 2;

const show = (text: string, x: number, y: number) => `/Helvetica findfont 24 scalefont setfont ${x} ${y} moveto (${text}) show`;

export function postscriptFixture(source: 'eps' | 'ps' | 'ai'): Buffer {
  switch (source) {
    case 'eps':
      return Buffer.from([
        '%!PS-Adobe-3.0 EPSF-3.0',
        `%%BoundingBox: 0 0 ${EPS_BOX.width} ${EPS_BOX.height}`,
        '%%EndComments',
        '0.2 0.4 0.8 setrgbcolor 20 20 360 260 rectfill',
        '0 setgray',
        show(OFFICE_MARKER, 40, 140),
        '%%EOF',
      ].join('\n') + '\n');
    case 'ps':
      return Buffer.from([
        '%!PS-Adobe-3.0',
        `%%Pages: ${PS_PAGES}`,
        '%%EndComments',
        ...Array.from({ length: PS_PAGES }, (_, page) => [
          `%%Page: ${page + 1} ${page + 1}`,
          '<< /PageSize [612 792] >> setpagedevice',
          show(`Page ${page + 1}: ${OFFICE_MARKER}`, 72, 700),
          'showpage',
        ].join('\n')),
        '%%EOF',
      ].join('\n') + '\n');
    case 'ai':
      // Illustrator 8 and before wrote PostScript with its own comments.
      return Buffer.from([
        '%!PS-Adobe-3.0',
        '%%Creator: Adobe Illustrator(R) 8.0',
        '%%BoundingBox: 0 0 612 792',
        '%%EndComments',
        show(OFFICE_MARKER, 72, 400),
        'showpage',
        '%%EOF',
      ].join('\n') + '\n');
  }
}

/** Programs a tenant might send: each must end cleanly (refused, timed out, capped). */
export const HOSTILE_POSTSCRIPT = {
  /** Reads a file of the server's: -dSAFER refuses it (invalidfileaccess). */
  readsPasswd: '%!PS\n/Helvetica findfont 12 scalefont setfont 72 700 moveto\n(/etc/passwd) (r) file 100 string readstring pop show\nshowpage\n',
  /** Runs a command through the %pipe% device: -dSAFER refuses it. */
  pipes: '%!PS\n(%pipe%touch /tmp/convd-gs-pwned) (w) file closefile\nshowpage\n',
  /** Never ends. */
  loops: '%!PS\n{ } loop\n',
  /** Pages without end, each with a little drawing: the output grows until it is stopped. */
  pages: '%!PS\n/Helvetica findfont 12 scalefont setfont\n1 1 1000000 { 72 700 moveto 40 string cvs show showpage } for\n',
  /** Not PostScript at all. */
  garbage: '%!PS\n(unclosed string\n',
} as const;
