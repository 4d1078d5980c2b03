import { basename, dirname, extname, join, relative, sep } from 'node:path';

/**
 * Which files `conv watch` looks at and where their results go. Pure functions of paths, so the
 * rules are the same for the initial scan and for events, and easy to read in one place.
 */

/** Names that are work in progress, not files to convert: dotfiles (our own `.x.part` downloads
 * included), editor backups and swap files, browser and copy-tool partials. */
const TRANSIENT = /(^\.|~$|\.(part|partial|tmp|temp|swp|swx|crdownload|download)$)/i;

export function isTransientName(name: string): boolean {
  return TRANSIENT.test(name);
}

/** True when `path` is `dir` or lies below it. */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep) && !/^[a-zA-Z]:/.test(rel));
}

/**
 * Where the result of `input` goes: the same relative place under `outDir` (beside the input
 * when there is no --out), with the input's name and the result's extension.
 */
export function outputPathFor(input: string, watchedDir: string, outDir: string, extension: string): string {
  const rel = relative(watchedDir, dirname(input));
  const stem = basename(input, extname(input));
  return join(outDir, rel, `${stem}.${extension}`);
}

/** The extension of a result file name (`photo.webp` -> `webp`), else the target itself. */
export function resultExtension(filename: string | undefined, target: string): string {
  const ext = filename ? extname(filename).slice(1) : '';
  return ext || target;
}
