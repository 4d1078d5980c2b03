import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { FormatDetails } from '../src/client/types.ts';
import { usageError } from './errors.ts';

/** A file on this machine sent beside the input, under the name an option gives it. */
export interface AttachedFile {
  kind: 'file';
  path: string;
  filename: string;
}

/**
 * `-O watermark_image=art/logo.png`: an option whose value names a file sent with the request
 * (the formats listing marks it `file`) is given a file on this machine. The file goes beside
 * the input under its own name, and the option names that (`watermark_image=logo.png`).
 */
export async function attachFiles(
  details: FormatDetails,
  target: string,
  raw: [string, string][],
  cwd: string,
): Promise<{ raw: [string, string][]; attachments: AttachedFile[] }> {
  const entry = details.data.find((candidate) => candidate.target === target.toLowerCase());
  const fileOptions = new Set(entry?.options.filter((option) => option.file === true).map((option) => option.name) ?? []);
  const attachments: AttachedFile[] = [];
  const rewritten: [string, string][] = [];
  for (const [name, value] of raw) {
    if (!fileOptions.has(name)) {
      rewritten.push([name, value]);
      continue;
    }
    const path = resolve(cwd, value);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) throw usageError(`-O ${name}=${value}: no such file`, `${name} takes a file on this machine, sent with the input`);
    attachments.push({ kind: 'file', path, filename: basename(path) });
    rewritten.push([name, basename(path)]);
  }
  return { raw: rewritten, attachments };
}
