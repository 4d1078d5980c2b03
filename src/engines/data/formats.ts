import type { FormatInfo, OptionDescriptor } from '../../formats/types.ts';

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
 * Options of one pair. `delimiter` belongs to the CSV side (the input's for csv -> *, the
 * output's for * -> csv); `header` says whether the CSV/TSV side has a header row.
 */
export function dataOptions(source: Tabular, target: Tabular): OptionDescriptor[] {
  const options: OptionDescriptor[] = [];
  if (source === 'csv') {
    options.push({
      name: 'delimiter', type: 'enum', values: ['auto', ...Object.keys(DELIMITERS)], default: 'auto',
      label: 'Field delimiter of the input (auto: detected from the first line)',
    });
  } else if (target === 'csv') {
    options.push({ name: 'delimiter', type: 'enum', values: Object.keys(DELIMITERS), default: 'comma', label: 'Field delimiter of the output' });
  }
  if (source === 'csv' || source === 'tsv') {
    options.push({ name: 'header', type: 'bool', values: [], default: true, label: 'The first row holds the column names (else rows become arrays)' });
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
