import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { ConversionInputSpec } from '../src/client/types.ts';
import { usageError } from './errors.ts';

/** One input of `conv convert`: a local file, a URL the server downloads, or stdin (`-`). */
export type InputArg =
  | { kind: 'file'; path: string; name: string }
  | { kind: 'url'; url: string; name: string }
  | { kind: 'stdin'; name: string };

const URL_PATTERN = /^https?:\/\//i;

/** The last path segment of a URL, decoded (what the server names a URL input). */
function urlName(url: URL): string {
  const segment = url.pathname.split('/').filter(Boolean).pop() ?? '';
  try {
    return decodeURIComponent(segment) || 'download';
  } catch {
    return segment || 'download';
  }
}

/**
 * Reads the positional inputs, failing with a usage error (exit 2) before anything is uploaded:
 * missing files, directories, several `-`, or `-` without `--from`.
 */
export async function classifyInputs(args: string[], cwd: string, from: string | undefined): Promise<InputArg[]> {
  const inputs: InputArg[] = [];
  let stdin = 0;
  for (const arg of args) {
    if (arg === '-') {
      stdin += 1;
      if (!from) throw usageError('reading stdin (-) needs --from <format>: a pipe has no file name to tell the format');
      inputs.push({ kind: 'stdin', name: `stdin.${from}` });
    } else if (URL_PATTERN.test(arg)) {
      let url: URL;
      try {
        url = new URL(arg);
      } catch {
        throw usageError(`not a valid URL: ${arg}`);
      }
      inputs.push({ kind: 'url', url: url.href, name: urlName(url) });
    } else {
      const path = resolve(cwd, arg);
      const info = await stat(path).catch(() => null);
      if (!info) throw usageError(`no such file: ${arg}`, undefined, 'input_not_found');
      if (!info.isFile()) throw usageError(`not a regular file: ${arg}`, undefined, 'input_not_found');
      inputs.push({ kind: 'file', path, name: basename(path) });
    }
  }
  if (stdin > 1) throw usageError('stdin (-) can be given only once');
  return inputs;
}

/** The source format a name suggests (its extension), lower-cased; undefined without one. */
export function extensionOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return undefined;
  return name.slice(dot + 1).toLowerCase();
}

export function toInputSpec(input: InputArg, stdin: NodeJS.ReadableStream): ConversionInputSpec {
  switch (input.kind) {
    case 'file':
      return { kind: 'file', path: input.path };
    case 'url':
      return { kind: 'url', url: input.url };
    case 'stdin':
      return { kind: 'stream', stream: stdin as import('node:stream').Readable, filename: input.name };
  }
}
