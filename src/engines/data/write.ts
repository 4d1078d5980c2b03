import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import { stringify as stringifyYaml } from 'yaml';
import { ConversionFailure } from '../../errors/api-error.ts';
import { outputCapFailure } from '../output-cap.ts';
import type { Tabular } from './formats.ts';
import type { Row } from './read.ts';

/**
 * Buffered, backpressure-aware text output that stops at `maxBytes` (EngineJob.maxOutputBytes):
 * a YAML whose aliases expand it a hundredfold fails there instead of filling the disk.
 */
export class TextSink {
  private readonly stream: WriteStream;
  private buffer = '';
  private written = 0;

  constructor(path: string, private readonly maxBytes?: number) {
    this.stream = createWriteStream(path);
  }

  async write(text: string): Promise<void> {
    if (this.maxBytes !== undefined) {
      this.written += Buffer.byteLength(text);
      if (this.written > this.maxBytes) throw outputCapFailure(this.maxBytes);
    }
    this.buffer += text;
    if (this.buffer.length >= 64 * 1024) await this.flush();
  }

  private async flush(): Promise<void> {
    if (!this.buffer) return;
    const ok = this.stream.write(this.buffer);
    this.buffer = '';
    if (!ok) await once(this.stream, 'drain');
  }

  async close(): Promise<void> {
    await this.flush();
    this.stream.end();
    await once(this.stream, 'finish');
  }

  destroy(): void {
    this.stream.destroy();
  }
}

function invalid(message: string): ConversionFailure {
  return new ConversionFailure('input_invalid', message);
}

/** Either every row is an object or every row is an array: CSV cannot mix named and positional columns. */
export function checkRow(row: unknown, index: number): Row {
  if (Array.isArray(row)) return row;
  if (row !== null && typeof row === 'object') return row as Record<string, unknown>;
  throw invalid(`Record ${index + 1} is ${row === null ? 'null' : `a ${typeof row}`}: a table needs objects (or arrays) as records.`);
}

/** For CSV/TSV targets every record must be an object or an array; JSON-like targets take any value. */
export async function* checkedRows(values: AsyncIterable<unknown>, target: Tabular): AsyncGenerator<Row> {
  let index = 0;
  for await (const value of values) {
    yield (target === 'csv' || target === 'tsv' ? checkRow(value, index) : value) as Row;
    index++;
  }
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  // Nested structures keep their content as JSON text in one cell.
  return JSON.stringify(value);
}

/**
 * CSV/TSV output. `columns` is the union of the objects' keys in order of first appearance (so it
 * needs a first pass over the rows); array rows are written as they are. TSV (a tab delimiter)
 * is written as it is read, literally: a quote is an ordinary character; only a value holding a
 * tab or a line break, which cannot stand in a TSV field as it is, is quoted as spreadsheets
 * quote it.
 */
export async function writeCsv(
  sink: TextSink,
  rows: AsyncIterable<Row>,
  columns: string[] | null,
  delimiter: string,
  header: boolean,
): Promise<void> {
  const tsvField = (text: string) => (/[\t\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  const line = (values: unknown[]): string => delimiter === '\t'
    ? `${values.map((value) => tsvField(cell(value))).join('\t')}\n`
    : stringifyCsv([values.map(cell)], { delimiter, record_delimiter: '\n' });
  if (columns && header) await sink.write(line(columns));
  let index = 0;
  let shape: 'object' | 'array' | undefined;
  for await (const row of rows) {
    const kind = Array.isArray(row) ? 'array' : 'object';
    shape ??= kind;
    if (kind !== shape) throw invalid(`Record ${index + 1} is ${kind === 'array' ? 'an array' : 'an object'} while the records before it are not.`);
    await sink.write(line(Array.isArray(row) ? row : (columns ?? []).map((name) => row[name])));
    index++;
  }
}

/** The key union of object rows, in order of first appearance. */
export async function collectColumns(rows: AsyncIterable<Row>): Promise<string[]> {
  const columns = new Set<string>();
  for await (const row of rows) {
    if (!Array.isArray(row)) for (const key of Object.keys(row)) columns.add(key);
  }
  return [...columns];
}

/** A JSON array written row by row, laid out exactly as JSON.stringify(array, null, indent) would. */
export async function writeJsonArray(sink: TextSink, rows: AsyncIterable<unknown>, indent: number): Promise<void> {
  let first = true;
  const pad = ' '.repeat(indent);
  for await (const row of rows) {
    const text = JSON.stringify(row, null, indent) ?? 'null';
    const item = indent > 0 ? `${pad}${text.replace(/\n/g, `\n${pad}`)}` : text;
    await sink.write(`${first ? '[' : ','}${indent > 0 ? '\n' : ''}${item}`);
    first = false;
  }
  await sink.write(first ? '[]\n' : `${indent > 0 ? '\n' : ''}]\n`);
}

/** A YAML sequence written row by row: each item is rendered on its own and the items concatenated. */
export async function writeYamlSequence(sink: TextSink, rows: AsyncIterable<unknown>, indent: number): Promise<void> {
  let any = false;
  for await (const row of rows) {
    await sink.write(stringifyYaml([row], { indent }));
    any = true;
  }
  if (!any) await sink.write('[]\n');
}

export async function writeNdjson(sink: TextSink, rows: AsyncIterable<unknown>): Promise<void> {
  for await (const row of rows) await sink.write(`${JSON.stringify(row) ?? 'null'}\n`);
}

export function yamlDocument(value: unknown, indent: number): string {
  return stringifyYaml(value, { indent });
}
