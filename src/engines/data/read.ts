import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { parseAllDocuments, visit, type Document } from 'yaml';
import { ConversionFailure } from '../../errors/api-error.ts';
import { DELIMITERS } from './formats.ts';
import { decodeUtf8, lineAndColumn, readUtf8Chunks } from './utf8.ts';

/** One record: an object (CSV with a header, JSON objects) or an array (CSV without one). */
export type Row = Record<string, unknown> | unknown[];

/** JSON and YAML are parsed whole; past this size they would not fit in memory comfortably. */
const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;
/** A single CSV record or NDJSON line larger than this is refused rather than buffered. */
const MAX_RECORD_CHARS = 32 * 1024 * 1024;
/** Columns of a CSV record at most: Excel's and LibreOffice's limit; a million made a 2.4 s header. */
export const MAX_CSV_COLUMNS = 16_384;
/** YAML aliases may repeat at most this many times the file's own size (and 1 MiB for a small file). */
const ALIAS_EXPANSION_FACTOR = 4;
const ALIAS_EXPANSION_FLOOR = 1024 * 1024;

function invalid(message: string): ConversionFailure {
  return new ConversionFailure('input_invalid', message);
}

/** Picks the delimiter that occurs most often on the first line (quoted parts ignored). */
export async function detectDelimiter(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, bytesRead).toString('utf8');
    const counts = new Map<string, number>();
    let quoted = false;
    for (const char of text) {
      if (char === '"') quoted = !quoted;
      else if (!quoted && (char === '\n' || char === '\r')) break;
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

/** CSV/TSV records, streamed. Malformed input fails with the line csv-parse stopped at. */
export async function* readCsv(path: string, delimiter: string, header: boolean, what: string): AsyncGenerator<Row> {
  const parser = parseCsv({
    delimiter,
    bom: true,
    skip_empty_lines: true,
    max_record_size: MAX_RECORD_CHARS,
    columns: header ? (names: string[]) => uniqueColumns(names, what) : false,
    // Each record comes with the line it ended on, so an error can name where the next one began.
    info: true,
  });
  const text = Readable.from(readUtf8Chunks(createReadStream(path), what));
  text.on('error', (error) => parser.destroy(error));
  text.pipe(parser);
  let lastLine = header ? 1 : 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Row; info: { lines: number } }>) {
      lastLine = info.lines;
      if (Array.isArray(record) && record.length > MAX_CSV_COLUMNS) throw tooManyColumns(what, record.length, info.lines);
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
      throw invalid(`The ${what} is malformed${line !== undefined && !/line \d+/.test(message) ? ` at line ${line}` : ''}: ${message}.`);
    }
    throw error;
  } finally {
    text.destroy();
  }
}

function tooManyColumns(what: string, count: number, line: number): ConversionFailure {
  return invalid(`The ${what} has ${count} columns at line ${line}; at most ${MAX_CSV_COLUMNS} are read.`);
}

function uniqueColumns(names: string[], what: string): string[] {
  if (names.length > MAX_CSV_COLUMNS) throw tooManyColumns(what, names.length, 1);
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw invalid(`The ${what} header names the column "${name}" twice (line 1).`);
    seen.add(name);
  }
  return names;
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
  const documents = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
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
  for (const document of documents) checkAliasExpansion(document, budget);
  try {
    const values = documents.map((document) => document.toJS({ maxAliasCount: 100 }) as unknown);
    return values.length === 1 ? values[0] : values;
  } catch (error) {
    throw invalid(`The YAML file cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * yaml's maxAliasCount counts aliases, weighted by the aliases inside what they name: one large
 * anchored list named 98 times passes it, and expanded 10 MB to a 1 GB result. Each alias is
 * weighed here by the source size of the node it names; past the budget the file is refused.
 */
function checkAliasExpansion(document: Document, budget: number): void {
  let expanded = 0;
  visit(document, {
    Alias(_, alias) {
      const range = alias.resolve(document)?.range;
      if (!range) return;
      expanded += range[1] - range[0];
      if (expanded > budget) {
        throw invalid(`The YAML file's aliases would repeat more than ${Math.round(budget / 1024 / 1024)} MB of it; at most ${ALIAS_EXPANSION_FACTOR} times the file's size is expanded.`);
      }
    },
  });
}
