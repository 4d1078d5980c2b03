import type { OutStream } from './io.ts';

export interface Colors {
  enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/**
 * Colour only for a terminal, and never when NO_COLOR is set to anything non-empty
 * (no-color.org) or TERM is "dumb". Plain SGR codes: a library would add start-up time for six
 * escape sequences.
 */
export function colorsFor(stream: OutStream, env: NodeJS.ProcessEnv): Colors {
  const enabled = stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\x1b[${open}m${text}\x1b[${close}m` : text);
  return {
    enabled,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}
