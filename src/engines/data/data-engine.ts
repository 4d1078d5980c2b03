import { readFileSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import { checkOutputSize } from '../output-cap.ts';
import type { Engine, EngineJob, EngineStatus } from '../types.ts';
import { DATA_FORMATS, MARKDOWN_OPTIONS, TABULAR, dataOptions, delimiterOf, type Tabular } from './formats.ts';
import { checkInputCap, DEFAULT_INPUT_CAPS, type InputCaps } from './input-caps.ts';
import type { TextEncoding } from './read.ts';
import type { Row } from './read.ts';
import { decodeText } from './utf8.ts';

/** Records that can be read more than once (a CSV target needs the column names before the first row). */
type RowSource = () => AsyncIterable<Row>;

export interface DataEngineOptions {
  /** Per-format input caps; DEFAULT_INPUT_CAPS when unset. */
  inputCaps?: InputCaps;
}

/** Data and text formats: csv, tsv, json, ndjson, yaml between each other and to a page (html), and markdown -> html. */
export function createDataEngine(settings: DataEngineOptions = {}): Engine {
  const caps = settings.inputCaps ?? DEFAULT_INPUT_CAPS;
  return {
    name: 'data',
    async probe(): Promise<EngineStatus> {
      const versions = ['csv-parse', 'csv-stringify', 'yaml', 'markdown-it', 'sanitize-html', 'jsonc-parser']
        .map((name) => `${name} ${packageVersion(name)}`);
      return { name: 'data', available: true, binary: 'javascript libraries', version: versions.join(', ') };
    },
    pairs(): ConversionPair[] {
      const pairs: ConversionPair[] = [];
      for (const source of TABULAR) {
        for (const target of TABULAR) {
          // csv -> csv and json -> json reformat (delimiter, indent); the other formats have nothing to change.
          if (source !== target || source === 'csv' || source === 'json') {
            // A table as CSV is a step chains go on from (to a spreadsheet, say).
            pairs.push({ source, target, engine: 'data', kind: 'data', options: dataOptions(source, target), variants: [], ...(target === 'csv' ? { intermediate: true } : {}) });
          }
        }
      }
      for (const source of TABULAR) {
        // The page Chromium prints data from (page.ts): a table whose cells wrap, nothing cut at
        // the page's edge. A CSV prints so too, rather than as LibreOffice's sheet, whose cells
        // are cut at the column's width (docs/formats.md, "Data to PDF"). Only to PDF: the page
        // is made for paper.
        pairs.push({
          source, target: 'html', engine: 'data', kind: 'data', options: dataOptions(source, 'html'), variants: [],
          intermediate: true, intermediateFor: ['pdf'], preferredFor: ['pdf'],
        });
      }
      // A styled, sanitised page: the step Markdown takes to Chromium's PDF and images.
      pairs.push({ source: 'md', target: 'html', engine: 'data', kind: 'data', options: MARKDOWN_OPTIONS, variants: [], intermediate: true });
      return pairs;
    },
    formats: () => DATA_FORMATS,
    convert: (job) => convertData(job, caps),
  };
}

/** A dependency's version, from the package.json above its entry point (not all export ./package.json). */
function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve(name));
  while (dir !== dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === name) return manifest.version ?? '?';
    } catch {
      // no package.json at this level
    }
    dir = dirname(dir);
  }
  return '?';
}

async function convertData(job: EngineJob, caps: InputCaps): Promise<void> {
  job.onProgress(0);
  job.signal.throwIfAborted();
  checkInputCap(job.source, (await stat(job.inputPath)).size, caps);
  if (job.source === 'md' && job.target === 'html') {
    const text = decodeText(await readFile(job.inputPath), 'Markdown file');
    // The parsers load with the first conversion that needs them, not with every daemon start
    // (markdown-it and sanitize-html, csv-parse, csv-stringify and yaml: about 90 ms of it).
    const { markdownToHtml } = await import('./markdown.ts');
    const html = markdownToHtml(text, job.options.full_document !== false);
    checkOutputSize(Buffer.byteLength(html), job.maxOutputBytes);
    await writeFile(job.outputPath, html);
  } else if (isTabular(job.source) && job.target === 'html') {
    await convertToPage(job, job.source);
  } else if (isTabular(job.source) && isTabular(job.target)) {
    await convertTabular(job, job.source, job.target);
  } else {
    throw new ConversionFailure('conversion_failed', `The data engine cannot convert ${job.source} to ${job.target}.`);
  }
  job.onProgress(100);
}

function isTabular(format: string): format is Tabular {
  return (TABULAR as readonly string[]).includes(format);
}

function option<T extends string | number | boolean>(job: EngineJob, name: string, fallback: T): T {
  const value = job.options[name];
  return (typeof value === typeof fallback ? value : fallback) as T;
}

async function convertTabular(job: EngineJob, source: Tabular, target: Tabular): Promise<void> {
  const [{ readJson, readNdjson, readYaml }, write] = await Promise.all([import('./read.ts'), import('./write.ts')]);
  const { checkedRows, collectColumns, TextSink, writeCsv, writeJsonArray, writeNdjson, writeYamlSequence, yamlDocument } = write;
  const header = headerOption(job);
  let rows: RowSource | undefined;
  let document: unknown;
  let isDocument = false;

  if (source === 'csv' || source === 'tsv') {
    rows = await csvRows(job, source);
  } else if (source === 'ndjson') {
    rows = () => checkedRows(readNdjson(job.inputPath), target);
  } else {
    document = source === 'json' ? await readJson(job.inputPath) : await readYaml(job.inputPath);
    isDocument = true;
    if (target === 'csv' || target === 'tsv' || target === 'ndjson') {
      const items = Array.isArray(document) ? document : document !== null && typeof document === 'object' ? [document] : undefined;
      if (!items) throw new ConversionFailure('input_invalid', `The ${source.toUpperCase()} file holds a single ${document === null ? 'null' : typeof document}, not records.`);
      rows = () => checkedRows(fromArray(items), target);
      isDocument = false;
    }
  }
  job.signal.throwIfAborted();

  const sink = new TextSink(job.outputPath, job.maxOutputBytes);
  try {
    if (isDocument) {
      const indent = option(job, 'indent', 2);
      await sink.write(target === 'json' ? `${JSON.stringify(document, null, indent) ?? 'null'}\n` : yamlDocument(document, Math.max(1, indent)));
    } else if (rows) {
      const aborting = abortable(rows, job.signal);
      if (target === 'csv' || target === 'tsv') {
        // csv -> csv: `delimiter` is the input's, `output_delimiter` the output's.
        const named = source === 'csv' && target === 'csv' ? option(job, 'output_delimiter', 'comma') : option(job, 'delimiter', 'comma');
        const delimiter = target === 'tsv' ? '\t' : delimiterOf(named);
        const columns = await collectColumns(aborting());
        await writeCsv(sink, aborting(), columns.length > 0 ? columns : null, delimiter, header !== false);
      } else if (target === 'json') {
        await writeJsonArray(sink, aborting(), option(job, 'indent', 2));
      } else if (target === 'yaml') {
        await writeYamlSequence(sink, aborting(), Math.max(1, option(job, 'indent', 2)));
      } else {
        await writeNdjson(sink, aborting());
      }
    }
    await sink.close();
  } catch (error) {
    sink.destroy();
    throw error;
  }
}

/** Unset (null) for CSV/TSV input: the reader decides from the first rows. */
function headerOption(job: EngineJob): boolean | 'auto' {
  return typeof job.options.header === 'boolean' ? job.options.header : 'auto';
}

/** The records of a CSV or TSV file, read as the job's options say. */
async function csvRows(job: EngineJob, source: 'csv' | 'tsv'): Promise<RowSource> {
  const { detectDelimiter, readCsv, resolveEncoding } = await import('./read.ts');
  const what = `${(job.origin ?? source).toUpperCase()} file`;
  // A CSV that a chain's first step wrote (a spreadsheet's) is convd's own: comma-separated
  // UTF-8, no comment lines. Detecting its delimiter could take a ; inside a cell for one.
  const made = job.origin !== undefined && job.origin !== source;
  const commentOption = made ? 'none' : option(job, 'comment', 'none');
  const comment = commentOption === 'none' ? null : commentOption;
  const named = made ? 'comma' : option(job, 'delimiter', 'auto');
  const delimiter = source === 'tsv' ? '\t' : named === 'auto' ? await detectDelimiter(job.inputPath, comment) : delimiterOf(named);
  const encoding = made ? 'utf-8' : await resolveEncoding(job.inputPath, option<TextEncoding>(job, 'encoding', 'auto'));
  const relaxColumnCount = option(job, 'relax_column_count', true);
  // TSV has no quoting convention: a quote character is part of its field.
  const quoted = source !== 'tsv';
  const header = headerOption(job);
  return () => readCsv(job.inputPath, { delimiter, header, what, relaxColumnCount, quoted, comment, encoding });
}

/**
 * Data as a page for Chromium to print (page.ts): records as a table, anything else pretty-printed
 * in the source's notation (YAML for YAML, JSON for the others).
 */
async function convertToPage(job: EngineJob, source: Tabular): Promise<void> {
  const [{ readJson, readNdjson, readYaml }, { TextSink, yamlDocument }, page] = await Promise.all([import('./read.ts'), import('./write.ts'), import('./page.ts')]);
  const notation = source === 'yaml' ? (value: unknown) => yamlDocument(value, 2) : (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';
  let rows: RowSource;
  let document: unknown;
  if (source === 'csv' || source === 'tsv') {
    rows = await csvRows(job, source);
  } else if (source === 'ndjson') {
    rows = () => readNdjson(job.inputPath) as AsyncIterable<Row>;
  } else {
    document = source === 'json' ? await readJson(job.inputPath) : await readYaml(job.inputPath);
    const items = Array.isArray(document) && document.length > 0 ? (document as Row[]) : undefined;
    rows = () => fromArray(items ?? [null]) as AsyncIterable<Row>;
  }
  job.signal.throwIfAborted();
  const title = `${(job.origin ?? source).toUpperCase()} data`;
  const sink = new TextSink(job.outputPath, job.maxOutputBytes);
  try {
    if (await page.isTable(rows)) {
      await page.writeTablePage(sink, title, rows, notation, job.signal);
    } else {
      // NDJSON that is not a table is its records, one after the other.
      const values: unknown[] = [];
      if (source === 'ndjson') for await (const value of rows()) values.push(value);
      const text = source === 'ndjson' ? values.map(notation).join('\n') : notation(document);
      await page.writeTextPage(sink, title, text);
    }
    await sink.close();
  } catch (error) {
    sink.destroy();
    throw error;
  }
}

async function* fromArray(items: unknown[]): AsyncGenerator<unknown> {
  yield* items;
}

/** Checks the signal every 1000 records, so a cancel lands while a large file is converted. */
function abortable(rows: RowSource, signal: AbortSignal): RowSource {
  return async function* () {
    let count = 0;
    for await (const row of rows()) {
      if (++count % 1000 === 0) {
        signal.throwIfAborted();
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      yield row;
    }
  };
}
