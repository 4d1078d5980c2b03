import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { isAlias, isMap, isScalar, isSeq, parseAllDocuments, type Document } from 'yaml';
import { ConversionFailure } from '../../errors/api-error.ts';
import { DELIMITERS, type TEXT_ENCODINGS } from './formats.ts';

export type TextEncoding = (typeof TEXT_ENCODINGS)[number];
import { ColumnNames, isNumbersOnly } from './columns.ts';
import { guardColumns } from './column-guard.ts';
import { decodeUtf8, lineAndColumn, readSingleByteChunks, readUtf8Chunks, textEncodingOf } from './utf8.ts';

/** One record: an object (CSV with a header, JSON objects) or an array (CSV without one). */
export type Row = Record<string, unknown> | unknown[];

/** JSON and YAML are parsed whole; past this size they would not fit in memory comfortably. */
const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;
/** A single CSV record or NDJSON line larger than this is refused rather than buffered. */
const MAX_RECORD_CHARS = 32 * 1024 * 1024;
/** Columns of a CSV record at most: Excel's and LibreOffice's limit; a million made a 2.4 s header. */
export const MAX_CSV_COLUMNS = 16_384;
/** A YAML document with its aliases expanded may be at most this many times the file (and 1 MiB for a small file). */
const ALIAS_EXPANSION_FACTOR = 4;
const ALIAS_EXPANSION_FLOOR = 1024 * 1024;

function invalid(message: string): ConversionFailure {
  return new ConversionFailure('input_invalid', message);
}

/**
 * Picks the delimiter that occurs most often on the first line that holds data (quoted parts
 * ignored): not a comment line (`comment`), not an empty one, not the BOM.
 */
export async function detectDelimiter(path: string, comment: string | null = null): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    // The delimiters are ASCII, the same bytes in UTF-8 and Windows-1252.
    const lines = buffer.subarray(0, bytesRead).toString('latin1').replace(/^\u00ef\u00bb\u00bf/, '').split(/\r?\n/);
    const text = lines.find((line) => line.trim() !== '' && !(comment && line.startsWith(comment))) ?? '';
    const counts = new Map<string, number>();
    let quoted = false;
    for (const char of text) {
      if (char === '"') quoted = !quoted;
      else if (!quoted && Object.values(DELIMITERS).includes(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    let best = ',';
    let bestCount = 0;
    for (const [char, count] of counts) {
      if (count > bestCount) [best, bestCount] = [char, count];
    }
    return best;
  } finally {
    await handle.close();
  }
}

/**
 * Whether the first row names the columns: `auto` says it does unless it is the only row or
 * holds nothing but numbers (a sheet of figures, a one-line file: every row is data then).
 */
export type HeaderMode = boolean | 'auto';

/** How to read a CSV/TSV file (the pair's options, resolved). */
export interface CsvReading {
  delimiter: string;
  header: HeaderMode;
  /** The user's format, for messages: "CSV file", "TSV file", "XLSX file". */
  what: string;
  /** Rows with more or fewer fields than the first are read (missing fields left out, extra ones named by their column). */
  relaxColumnCount?: boolean;
  /** false: a quote character is an ordinary one (TSV has no quoting convention). */
  quoted?: boolean;
  /** Lines starting with this are skipped; null: none. */
  comment?: string | null;
  /** Resolved (resolveEncoding): a CSV is read twice for a CSV target, its bytes checked once. */
  encoding?: Exclude<TextEncoding, 'auto'>;
}

/**
 * CSV/TSV records, streamed: objects keyed by the header's column names (ColumnNames: blank and
 * repeated cells get names of their own), or arrays when the first row is data.
 */
export async function* readCsv(path: string, reading: CsvReading): AsyncGenerator<Row> {
  const records = readRecords(path, reading);
  try {
    const first = await records.next();
    if (first.done) return;
    const held: string[][] = [first.value];
    let header = reading.header;
    if (header === 'auto') {
      const second = await records.next();
      if (!second.done) held.push(second.value);
      header = !second.done && !isNumbersOnly(first.value);
    }
    if (!header) {
      yield* held;
      yield* records;
      return;
    }
    const columns = new ColumnNames(first.value);
    const named = (record: string[]): Row => {
      const row: Record<string, unknown> = {};
      record.forEach((value, index) => (row[columns.at(index)] = value));
      return row;
    };
    if (held[1]) yield named(held[1]);
    for await (const record of records) yield named(record);
  } finally {
    await records.return(undefined);
  }
}

/** The records as arrays of fields. Malformed input fails with the line csv-parse stopped at. */
async function* readRecords(path: string, reading: CsvReading): AsyncGenerator<string[]> {
  const { delimiter, what } = reading;
  const parser = parseCsv({
    delimiter,
    bom: true,
    skip_empty_lines: true,
    max_record_size: MAX_RECORD_CHARS,
    relax_column_count: reading.relaxColumnCount === true,
    ...(reading.quoted === false ? { quote: false } : {}),
    // A comment only at the start of a line: "Item #3" in a field stays whole.
    ...(reading.comment ? { comment: reading.comment, comment_no_infix: true } : {}),
    // Each record comes with the line it ended on, so an error can name where the next one began.
    info: true,
  });
  const encoding = reading.encoding ?? 'utf-8';
  const decoded = encoding === 'utf-8' ? readUtf8Chunks(createReadStream(path), what) : readSingleByteChunks(createReadStream(path), encoding);
  const rules = { delimiter, quoted: reading.quoted !== false, comment: reading.comment ?? null, maxColumns: MAX_CSV_COLUMNS };
  const text = Readable.from(guardColumns(decoded, rules, (wide) => tooManyColumns(what, wide.columns, wide.line)));
  text.on('error', (error) => parser.destroy(error));
  text.pipe(parser);
  let lastLine = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      lastLine = info.lines;
      if (record.length > MAX_CSV_COLUMNS) throw tooManyColumns(what, record.length, info.lines);
      yield record;
    }
  } catch (error) {
    if (error instanceof ConversionFailure) throw error;
    if (error instanceof CsvError) {
      if (error.code === 'CSV_QUOTE_NOT_CLOSED') {
        // csv-parse reports where the file ended; the user needs where the open quote is.
        throw invalid(`The ${what} is malformed: the record starting at line ${lastLine + 1} opens a quote that is never closed.`);
      }
      const line = typeof error.lines === 'number' ? error.lines : undefined;
      const message = error.message.replace(/\.$/, '');
      // Uneven rows are read by default; this is for those who asked for a strict reading.
      const hint = /INCONSISTENT/.test(error.code) ? ' Send relax_column_count=true to read rows of uneven length.' : '';
      throw invalid(`The ${what} is malformed${line !== undefined && !/line \d+/.test(message) ? ` at line ${line}` : ''}: ${message}.${hint}`);
    }
    throw error;
  } finally {
    text.destroy();
  }
}

/** `auto`: as every text file is read (utf8.ts textEncodingOf), UTF-8 where valid, else Windows-1252 (Excel's too). */
export async function resolveEncoding(path: string, encoding: TextEncoding): Promise<Exclude<TextEncoding, 'auto'>> {
  return encoding === 'auto' ? textEncodingOf(path) : encoding;
}

function tooManyColumns(what: string, count: number, line: number): ConversionFailure {
  return invalid(`The ${what} has ${count} columns at line ${line}; at most ${MAX_CSV_COLUMNS} are read.`);
}


/** NDJSON: one JSON value per line, blank lines skipped. */
export async function* readNdjson(path: string): AsyncGenerator<unknown> {
  const lines = createInterface({ input: Readable.from(readUtf8Chunks(createReadStream(path), 'NDJSON file')), crlfDelay: Infinity });
  let number = 0;
  try {
    for await (const line of lines) {
      number++;
      if (line.length > MAX_RECORD_CHARS) throw invalid(`Line ${number} of the NDJSON file is longer than ${MAX_RECORD_CHARS} characters.`);
      if (line.trim() === '') continue;
      try {
        yield JSON.parse(line);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        throw invalid(`Line ${number} of the NDJSON file is not valid JSON: ${jsonError(line)}.`);
      }
    }
  } finally {
    lines.close();
  }
}

async function readDocumentText(path: string, what: string): Promise<string> {
  const size = (await stat(path)).size;
  if (size > MAX_DOCUMENT_BYTES) {
    throw new ConversionFailure('conversion_failed', `The ${what} is larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB, the most read as one document.`);
  }
  return decodeUtf8(await readFile(path), what);
}

export async function readJson(path: string): Promise<unknown> {
  const text = await readDocumentText(path, 'JSON file');
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw invalid(`The JSON file is not valid JSON: ${jsonError(text)}.`);
  }
}

/**
 * Where JSON.parse gave up, as "line L, column C: reason". V8's messages do not always carry a
 * position, so the location comes from jsonc-parser run in strict mode on the same text.
 */
function jsonError(text: string): string {
  const errors: ParseError[] = [];
  parseJsonc(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return 'unexpected content';
  const { line, column } = lineAndColumn(text, first.offset);
  return `line ${line}, column ${column}: ${describeJsonError(printParseErrorCode(first.error))}`;
}

function describeJsonError(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

/** YAML (several documents become an array of them). Anchors are limited against alias bombs. */
export async function readYaml(path: string): Promise<unknown> {
  const text = await readDocumentText(path, 'YAML file');
  let documents: ReturnType<typeof parseAllDocuments>;
  try {
    // uniqueKeys off: yaml compares every key of a map with every other (50,000 keys took 15 s);
    // duplicates are found in checkDocument's one pass instead.
    documents = parseAllDocuments(text, { uniqueKeys: false, prettyErrors: true });
  } catch (error) {
    if (error instanceof RangeError) throw invalid('The YAML file is nested too deeply to be read.');
    throw error;
  }
  if (documents.length === 0) return null; // an empty file
  for (const document of documents) {
    const error = document.errors[0];
    if (error) {
      const at = error.linePos?.[0];
      const where = at ? `line ${at.line}, column ${at.col}` : 'somewhere';
      const reason = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      throw invalid(`The YAML file is malformed at ${where}: ${reason}.`);
    }
  }
  const budget = Math.max(ALIAS_EXPANSION_FLOOR, ALIAS_EXPANSION_FACTOR * text.length);
  for (const document of documents) checkDocument(document, text, budget);
  try {
    const values = documents.map((document) => document.toJS({ maxAliasCount: MAX_USES_OF_AN_ANCHOR }) as unknown);
    return values.length === 1 ? values[0] : values;
  } catch (error) {
    throw invalid(`The YAML file cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** An anchor may be named this often (yaml's toJS refuses more, after a walk of the document per alias). */
const MAX_USES_OF_AN_ANCHOR = 100;
/** Aliases in a document at most: yaml resolves each by walking the whole document. */
const MAX_ALIASES = 1000;

/**
 * One pass over a parsed YAML document, linear in its size, for what yaml itself checks in time
 * that grows with the square of the input: duplicate keys (yaml's uniqueKeys compares each key
 * with all others), and aliases (yaml resolves each by walking the document, and its
 * maxAliasCount, weighing them by count, let one large list named 98 times expand 10 MB to 1 GB).
 * The document is measured as it would be written out, each alias as large as what it names
 * (anchors come before their aliases, so nested ones multiply as they would); past the budget,
 * or past the alias counts, the file is refused.
 */
function checkDocument(document: Document, text: string, budget: number): void {
  const anchors = new Map<string, { size: number; uses: number }>();
  let aliases = 0;
  const tooLarge = () => invalid(`The YAML file's aliases would expand it past ${Math.round(budget / 1024 / 1024)} MB; at most ${ALIAS_EXPANSION_FACTOR} times the file's size is expanded.`);
  const sizeOf = (node: unknown): number => {
    if (node === null || node === undefined) return 0;
    if (isAlias(node)) {
      const anchor = anchors.get(node.source);
      if (++aliases > MAX_ALIASES) throw invalid(`The YAML file has more than ${MAX_ALIASES} aliases.`);
      if (anchor && ++anchor.uses > MAX_USES_OF_AN_ANCHOR) throw invalid(`The YAML file names the anchor "${node.source}" more than ${MAX_USES_OF_AN_ANCHOR} times.`);
      return anchor?.size ?? 0;
    }
    let size = 0;
    if (isScalar(node)) {
      size = node.range ? node.range[1] - node.range[0] : String(node.value).length;
    } else if (isSeq(node)) {
      size = 2;
      for (const item of node.items) {
        size += sizeOf(item) + 1;
        if (size > budget) throw tooLarge();
      }
    } else if (isMap(node)) {
      size = 2;
      const keys = new Set<unknown>();
      for (const pair of node.items) {
        if (isScalar(pair.key)) {
          if (keys.has(pair.key.value)) {
            const { line, column } = lineAndColumn(text, pair.key.range?.[0] ?? 0);
            throw invalid(`The YAML file is malformed at line ${line}, column ${column}: the key "${String(pair.key.value)}" appears twice in one mapping.`);
          }
          keys.add(pair.key.value);
        }
        size += sizeOf(pair.key) + sizeOf(pair.value) + 2;
        if (size > budget) throw tooLarge();
      }
    }
    const anchor = (node as { anchor?: string }).anchor;
    if (anchor) anchors.set(anchor, { size, uses: 0 });
    return size;
  };
  let total: number;
  try {
    total = sizeOf(document.contents);
  } catch (error) {
    if (error instanceof RangeError) throw invalid('The YAML file is nested too deeply to be read.');
    throw error;
  }
  if (total > budget) throw tooLarge();
}
