import { colorsFor, type Colors } from './colors.ts';
import type { Io, OutStream } from './io.ts';

export interface OutputMode {
  json: boolean;
  quiet: boolean;
}

/**
 * Where everything the CLI prints goes. Data (API objects, tables) on stdout; messages, progress
 * and errors on stderr, so `conv … --json | jq` and `conv … -o - > file` always get clean data.
 */
export class Output {
  readonly out: Colors;
  readonly err: Colors;

  constructor(
    private readonly io: Io,
    readonly mode: OutputMode,
  ) {
    this.out = colorsFor(io.stdout, io.env);
    this.err = colorsFor(io.stderr, io.env);
  }

  get stdout(): OutStream {
    return this.io.stdout;
  }

  get stderr(): OutStream {
    return this.io.stderr;
  }

  /** One JSON document: indented for a person at a terminal, one line for a pipe. */
  json(value: unknown): void {
    const text = this.io.stdout.isTTY ? JSON.stringify(value, null, 2) : JSON.stringify(value);
    this.io.stdout.write(`${text}\n`);
  }

  /** One line of NDJSON (list --all). */
  jsonLine(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A line of human output on stdout (suppressed by --quiet). */
  line(text = ''): void {
    if (!this.mode.quiet) this.io.stdout.write(`${text}\n`);
  }

  /** A line that stays even with --quiet (an id a script captures). */
  essential(text: string): void {
    this.io.stdout.write(`${text}\n`);
  }

  /** A message for the person on stderr (suppressed by --quiet). */
  note(text: string): void {
    if (!this.mode.quiet) this.io.stderr.write(`${text}\n`);
  }

  warn(text: string): void {
    this.io.stderr.write(`${this.err.yellow('warning:')} ${text}\n`);
  }

  /** `error: <code>: <message>` on stderr, always. */
  error(code: string, message: string, hint?: string): void {
    this.io.stderr.write(`${this.err.red('error:')} ${code}: ${message}\n`);
    if (hint) this.io.stderr.write(`${this.err.dim(hint)}\n`);
  }

  table(headers: string[], rows: string[][]): void {
    if (this.mode.quiet) return;
    this.io.stdout.write(renderTable(headers, rows, this.out));
  }
}

/** Strips SGR sequences to measure what a terminal shows. */
function visibleLength(text: string): number {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, '').length;
}

export function renderTable(headers: string[], rows: string[][], colors: Colors): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => visibleLength(row[column] ?? ''))),
  );
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat(widths[column]! - visibleLength(cell))))
      .join('  ')
      .trimEnd();
  const lines = [colors.bold(format(headers)), ...rows.map(format)];
  return `${lines.join('\n')}\n`;
}
