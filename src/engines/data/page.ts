/**
 * Data as a page to print (csv, tsv, json, ndjson, yaml -> html, the step Chromium prints to PDF):
 * nothing of the data may be lost to the page's edge. Records print as a table whose cells wrap;
 * a table too wide for a portrait page is cut into bands of whole columns, one under the other,
 * each headed by its column names and a row number; anything else prints whole, pretty-printed
 * in its own notation and wrapped. Every value is the user's: it reaches the page escaped.
 */
import { columnLetter } from './columns.ts';
import { escapeHtml } from './escape.ts';
import type { Row } from './read.ts';
import type { TextSink } from './write.ts';

/** Records that can be read more than once: the columns' widths are measured before they are written. */
export type RowSource = () => AsyncIterable<Row>;

/** How nested values and non-tables are written out: JSON for JSON and NDJSON, YAML for YAML. */
export type Notation = (value: unknown) => string;

/**
 * The width one band of columns may take, CSS pixels: A4 portrait with Chromium's default 10 mm
 * margins holds 718 (Letter 740), less a margin for the estimate. Wider paper has room to spare;
 * narrower paper gets a smaller font (PAGE_STYLE's media query).
 */
const BAND_PX = 700;
/** Average advance of a character at the table's 9 pt (12 px) in DejaVu Sans, and a cell's padding and border. */
const CHAR_PX = 7.4;
const CELL_PX = 10;
/**
 * A word longer than this gets break opportunities (<wbr>) every so many characters: a table
 * column is never narrower than its longest unbreakable word, so one URL could push the table
 * past the page.
 */
const LONGEST_WORD = 24;
/** A column is planned at least this wide (characters) when its values are that long, for legibility. */
const COMFORTABLE = 14;

const PAGE_STYLE = [
  'body{font-family:"DejaVu Sans","Liberation Sans",Helvetica,Arial,sans-serif;font-size:9pt;line-height:1.35;margin:0;color:#1f2328}',
  '@media screen{body{margin:1em}}',
  // A page narrower than the bands were planned for (A5, wide margins): a smaller font, so they fit.
  '@media print and (max-width:690px){body{font-size:6pt}}',
  'table{border-collapse:collapse;margin:0 0 1.5em}',
  'th,td{border:1px solid #d1d9e0;padding:.2em .35em;text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:break-word}',
  'th{background:#f6f8fa}',
  'th.row,td.row{color:#59636e;text-align:right}',
  'thead{display:table-header-group}',
  'tr{break-inside:avoid}',
  '.nested,pre{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:.95em}',
  'pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}',
].join('');

function pageStart(title: string): string {
  return [
    '<!DOCTYPE html>',
    '<html>',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head>',
    '<body>',
    '',
  ].join('\n');
}

const PAGE_END = '</body>\n</html>\n';

/** Whether every record is an object, or every record an array: what prints as a table. */
export async function isTable(rows: RowSource): Promise<boolean> {
  let shape: 'object' | 'array' | undefined;
  for await (const row of rows() as AsyncIterable<unknown>) {
    const kind = Array.isArray(row) ? 'array' : row !== null && typeof row === 'object' ? 'object' : undefined;
    if (!kind || (shape && kind !== shape)) return false;
    shape = kind;
  }
  return true;
}

/** A value that is not a table, whole: pretty-printed, wrapped at the page's edge. */
export async function writeTextPage(sink: TextSink, title: string, text: string): Promise<void> {
  await sink.write(pageStart(title));
  await sink.write(`<pre>${escapeHtml(text)}</pre>\n`);
  await sink.write(PAGE_END);
}

interface Column {
  /** The key of object records, the index of array records. */
  key: string | number;
  label: string;
  /** Width planned for the column, CSS pixels. */
  px: number;
}

/** Records (all objects or all arrays, isTable) as a table, in bands of columns that fit the page. */
export async function writeTablePage(sink: TextSink, title: string, rows: RowSource, notation: Notation, signal: AbortSignal): Promise<void> {
  const { columns, count } = await measure(rows, notation, signal);
  const bands = bandsOf(columns, count);
  await sink.write(pageStart(title));
  for (const band of bands) {
    const numbered = bands.length > 1;
    const head = band.map((column) => `<th>${breakable(column.label)}</th>`).join('');
    await sink.write(`<table>\n<thead><tr>${numbered ? '<th class="row">#</th>' : ''}${head}</tr></thead>\n<tbody>\n`);
    let index = 0;
    for await (const row of rows()) {
      if (++index % 1000 === 0) signal.throwIfAborted();
      const cells = band.map((column) => cellHtml(valueAt(row, column.key), notation)).join('');
      await sink.write(`<tr>${numbered ? `<td class="row">${index}</td>` : ''}${cells}</tr>\n`);
    }
    await sink.write('</tbody>\n</table>\n');
  }
  await sink.write(PAGE_END);
}

function valueAt(row: Row, key: string | number): unknown {
  return Array.isArray(row) ? row[key as number] : row[key as string];
}

/** The columns (the union of the objects' keys in order of first appearance, or A, B, C...) and each one's width. */
async function measure(rows: RowSource, notation: Notation, signal: AbortSignal): Promise<{ columns: Column[]; count: number }> {
  const keys = new Map<string | number, { longest: number; widest: number }>();
  let count = 0;
  const see = (key: string | number, text: string) => {
    let seen = keys.get(key);
    if (!seen) keys.set(key, (seen = { longest: 0, widest: 0 }));
    seen.longest = Math.max(seen.longest, longestWord(text));
    seen.widest = Math.max(seen.widest, Math.min(COMFORTABLE, width(text)));
  };
  for await (const row of rows()) {
    if (++count % 1000 === 0) signal.throwIfAborted();
    if (Array.isArray(row)) row.forEach((value, index) => see(index, cellText(value, notation)));
    else for (const [key, value] of Object.entries(row)) see(key, cellText(value, notation));
  }
  const columns = [...keys.entries()].map(([key, seen]) => {
    const label = typeof key === 'number' ? columnLetter(key) : key;
    // Headers are bold: a tenth wider.
    const chars = Math.max(3, seen.longest, seen.widest, Math.ceil(longestWord(label) * 1.1));
    return { key, label, px: chars * CHAR_PX + CELL_PX };
  });
  // Array records: in column order, whichever row was the first to be long.
  columns.sort((a, b) => (typeof a.key === 'number' && typeof b.key === 'number' ? a.key - b.key : 0));
  return { columns, count };
}

/** Whole columns, in order, as many to a band as fit BAND_PX (with the row number's column when there are several bands). */
function bandsOf(columns: Column[], count: number): Column[][] {
  const total = columns.reduce((sum, column) => sum + column.px, 0);
  if (total <= BAND_PX) return [columns];
  const budget = BAND_PX - (String(count).length * CHAR_PX + CELL_PX);
  const bands: Column[][] = [];
  let band: Column[] = [];
  let used = 0;
  for (const column of columns) {
    if (band.length > 0 && used + column.px > budget) {
      bands.push(band);
      band = [];
      used = 0;
    }
    band.push(column);
    used += column.px;
  }
  if (band.length > 0) bands.push(band);
  return bands;
}

function cellText(value: unknown, notation: Notation): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return notation(value).replace(/\n$/, '');
}

function cellHtml(value: unknown, notation: Notation): string {
  const nested = value !== null && typeof value === 'object';
  return `<td${nested ? ' class="nested"' : ''}>${breakable(cellText(value, notation))}</td>`;
}

/** Characters of East Asian scripts take about two of the table's average advances. */
const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;

function width(text: string): number {
  let chars = 0;
  for (const char of text) chars += WIDE.test(char) ? 2 : 1;
  return chars;
}

/** The width of the longest run without a break opportunity, at most LONGEST_WORD (longer ones get <wbr>). */
function longestWord(text: string): number {
  let longest = 0;
  for (const word of text.split(/[\s\-\u2010]+/)) {
    // East Asian text breaks between characters.
    const chars = WIDE.test(word) ? 2 : width(word);
    longest = Math.max(longest, Math.min(LONGEST_WORD, chars));
    if (longest === LONGEST_WORD) break;
  }
  return longest;
}

/**
 * Escaped text whose words longer than LONGEST_WORD may break: after a URL's or a path's
 * punctuation, and where a run without any is longer still, every LONGEST_WORD characters.
 */
function breakable(text: string): string {
  return text.split(/(\s+)/).map((part) => {
    if ([...part].length <= LONGEST_WORD) return escapeHtml(part);
    return part.split(/(?<=[/.\-_?&=,;:])/).flatMap((piece) => {
      const chars = [...piece];
      const pieces: string[] = [];
      for (let at = 0; at < chars.length; at += LONGEST_WORD) pieces.push(chars.slice(at, at + LONGEST_WORD).join(''));
      return pieces;
    }).map(escapeHtml).join('<wbr>');
  }).join('');
}
