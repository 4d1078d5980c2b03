import { InvalidArgumentError } from 'commander';

/** Argument parsers for commander: a bad value is a usage error (exit 2) before anything runs. */

export function integerIn(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}.`);
    const number = Number(value);
    if (number < min || number > max) throw new InvalidArgumentError(`must be from ${min} to ${max}.`);
    return number;
  };
}

/** Seconds, fractional allowed (`--wait 2.5`). */
export function seconds(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0) {
    throw new InvalidArgumentError('must be a number of seconds (put --wait after the input files, or write --wait=N).');
  }
  return number;
}

/** Repeatable `-O key=value`. */
export function keyValue(value: string, previous: [string, string][] = []): [string, string][] {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('must be key=value, e.g. -O quality=80.');
  return [...previous, [value.slice(0, eq).trim(), value.slice(eq + 1)]];
}

/** The examples block every command's --help ends with. */
export function examples(lines: [string, string][]): string {
  return `\nExamples:\n${lines.map(([command, what]) => `  $ ${command}\n      ${what}`).join('\n')}\n`;
}
