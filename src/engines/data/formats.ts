import type { FormatInfo, OptionDescriptor } from '../pairs.ts';

/** Formats that hold records (or, for JSON and YAML, any document) and convert between each other. */
export const TABULAR = ['csv', 'tsv', 'json', 'ndjson', 'yaml'] as const;
export type Tabular = (typeof TABULAR)[number];

export const DATA_FORMATS: FormatInfo[] = [
  { key: 'csv', extensions: ['csv'], mime: 'text/csv' },
  { key: 'tsv', extensions: ['tsv', 'tab'], mime: 'text/tab-separated-values' },
  { key: 'json', extensions: ['json'], mime: 'application/json' },
  { key: 'ndjson', extensions: ['ndjson', 'jsonl'], mime: 'application/x-ndjson' },
  { key: 'yaml', extensions: ['yaml', 'yml'], mime: 'application/yaml' },
  { key: 'md', extensions: ['md', 'markdown'], mime: 'text/markdown' },
  { key: 'html', extensions: ['html', 'htm'], mime: 'text/html' },
];

/** Names of the `delimiter` option's values and the character each stands for. */
export const DELIMITERS: Record<string, string> = { comma: ',', semicolon: ';', tab: '\t', pipe: '|' };
/**
 * The values `delimiter` takes: the names, and the characters as people type them
 * (`delimiter=;`). A tab is only named: option values are trimmed.
 */
export const DELIMITER_VALUES = [...Object.keys(DELIMITERS), ',', ';', '|'];

/** The character a `delimiter` value stands for (a name or the character itself). */
export function delimiterOf(value: string, fallback = ','): string {
  return DELIMITERS[value] ?? (DELIMITER_VALUES.includes(value) ? value : fallback);
}

/** Line prefixes the `comment` option offers (none: no line is a comment). */
export const COMMENT_PREFIXES = ['none', '#', '//', ';'] as const;
/** Text encodings of CSV/TSV input; auto: UTF-8 when the file is valid UTF-8, else Windows-1252. */
export const TEXT_ENCODINGS = ['auto', 'utf-8', 'windows-1252', 'latin1'] as const;

/**
 * Options of one pair. `delimiter` belongs to the CSV side (the input's for csv -> *, the
 * output's for * -> csv; csv -> csv has `output_delimiter` for its output); `header` says whether
 * the CSV/TSV side has a header row. CSV and TSV as they come out of real spreadsheets and
 * scripts: rows of uneven length, comment lines, Latin-1 text (a BOM is always dropped). To html
 * (a page of the data) only the input's options apply.
 */
export function dataOptions(source: Tabular, target: Tabular | 'html'): OptionDescriptor[] {
  const options: OptionDescriptor[] = [];
  if (source === 'csv') {
    options.push({
      name: 'delimiter', type: 'enum', values: ['auto', ...DELIMITER_VALUES], default: 'auto',
      label: 'Field delimiter of the input, by name or as the character (auto: the most frequent of , ; tab | on the first line that holds data)',
    });
  } else if (target === 'csv') {
    options.push({ name: 'delimiter', type: 'enum', values: DELIMITER_VALUES, default: 'comma', label: 'Field delimiter of the output, by name or as the character' });
  }
  if (source === 'csv' && target === 'csv') {
    options.push({ name: 'output_delimiter', type: 'enum', values: DELIMITER_VALUES, default: 'comma', label: 'Field delimiter of the output, by name or as the character' });
  }
  if (source === 'csv' || source === 'tsv') {
    options.push({
      name: 'header', type: 'bool', values: [], default: null,
      label: 'The first row holds the column names (unset: it does unless it is the only row or holds only numbers; false: rows become arrays)',
    });
    options.push({
      name: 'relax_column_count', type: 'bool', values: [], default: true,
      label: 'Read rows with more or fewer fields than the first (missing fields are left out, extra ones named by their column\'s letter); false refuses them',
    });
    options.push({ name: 'comment', type: 'enum', values: [...COMMENT_PREFIXES], default: 'none', label: 'Lines starting with this are comments, skipped' });
    options.push({ name: 'encoding', type: 'enum', values: [...TEXT_ENCODINGS], default: 'auto', label: 'Text encoding of the input (auto: UTF-8 if valid, else Windows-1252)' });
  } else if (target === 'csv' || target === 'tsv') {
    options.push({ name: 'header', type: 'bool', values: [], default: true, label: 'Write a header row with the column names' });
  }
  if (target === 'json') {
    options.push({ name: 'indent', type: 'range', values: [], min: 0, max: 8, default: 2, label: 'Spaces of indentation (0: one line)' });
  } else if (target === 'yaml') {
    options.push({ name: 'indent', type: 'range', values: [], min: 1, max: 8, default: 2, label: 'Spaces of indentation' });
  }
  return options;
}

export const MARKDOWN_OPTIONS: OptionDescriptor[] = [
  { name: 'full_document', type: 'bool', values: [], default: true, label: 'A complete HTML page (else only the body content)' },
];
