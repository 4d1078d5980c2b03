import { randomBytes } from 'node:crypto';
import { constants, createWriteStream } from 'node:fs';
import { copyFile, mkdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DownloadResult } from '../src/client/types.ts';
import { CliError, usageError } from './errors.ts';
import { EXIT } from './exit-codes.ts';
import { trackPartialFile } from './partial-files.ts';

/** Where a result goes: `-o -`, `-o existing-dir` (or `dir/`), or `-o file`. */
export type Destination =
  | { kind: 'stdout' }
  | { kind: 'dir'; path: string }
  | { kind: 'file'; path: string };

/**
 * Reads what `-o` means. A path that is an existing directory, or ends in "/", is a directory
 * (created when missing); anything else is a file whose directory must exist.
 */
export async function resolveDestination(output: string | undefined, cwd: string): Promise<Destination> {
  if (output === '-') return { kind: 'stdout' };
  if (output === undefined) return { kind: 'dir', path: cwd };
  const path = resolve(cwd, output);
  if (output.endsWith('/')) {
    await mkdir(path, { recursive: true });
    return { kind: 'dir', path };
  }
  const info = await stat(path).catch(() => null);
  if (info?.isDirectory()) return { kind: 'dir', path };
  const parent = await stat(dirname(path)).catch(() => null);
  if (!parent?.isDirectory()) throw usageError(`cannot write ${output}: directory ${dirname(path)} does not exist`);
  return { kind: 'file', path };
}

/** Counts bytes as they pass, so a body cut short is told apart from a complete one. */
function counter(): Transform & { bytes: number } {
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      transform.bytes += chunk.length;
      callback(null, chunk);
    },
  }) as Transform & { bytes: number };
  transform.bytes = 0;
  return transform;
}

function checkLength(bytes: number, expected: number | null): void {
  if (expected !== null && bytes !== expected) {
    throw new CliError(EXIT.error, 'download_incomplete', `received ${bytes} of ${expected} bytes`);
  }
}

/**
 * Writes a download. To a file: into a temporary file beside the target, renamed over it only
 * when every byte arrived, so an interrupted download never leaves a partial file under the
 * real name. Returns the path written (null for stdout).
 */
export async function saveDownload(
  download: DownloadResult,
  destination: Destination,
  stdout: NodeJS.WritableStream,
  name: string = download.filename,
): Promise<string | null> {
  const count = counter();
  if (destination.kind === 'stdout') {
    // stdout stays open: other output (or the next result) may follow.
    await pipeline(download.stream, count, stdout as NodeJS.WritableStream, { end: false });
    checkLength(count.bytes, download.size);
    return null;
  }
  const target = destination.kind === 'dir' ? join(destination.path, basename(name)) : destination.path;
  // In-process the result is a whole file already, and ours to take: a rename puts it in place at
  // once (nothing partial can show under the real name), without copying a byte or making a file.
  if (download.localPath && (await movedInto(download.localPath, target))) return target;
  const temp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.part`);
  const untrack = trackPartialFile(temp);
  try {
    // No fsync (as cp, curl and ImageMagick do not): the rename is what keeps a partial file
    // from ever showing under the real name; an fsync per result made a batch of small images
    // wait on the disk, several times over on a busy one.
    if (download.localPath) {
      // In-process, on another file system: the kernel copies it (a batch of small images spent
      // more on streaming each result through JS than on converting it).
      await copyFile(download.localPath, temp, constants.COPYFILE_EXCL);
    } else {
      await pipeline(download.stream, count, createWriteStream(temp, { flags: 'wx' }));
      checkLength(count.bytes, download.size);
    }
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  } finally {
    untrack();
  }
  return target;
}

/** S_ISGID of stat(2)'s mode (node's fs.constants has no name for it). */
const SET_GROUP_ID = 0o2000;
/** Whether each destination directory is set-group-ID (asked once per directory and run). */
const setgidDirs = new Map<string, Promise<boolean>>();

function isSetgidDir(dir: string): Promise<boolean> {
  let known = setgidDirs.get(dir);
  if (!known) {
    known = stat(dir).then((info) => (info.mode & SET_GROUP_ID) !== 0, () => false);
    setgidDirs.set(dir, known);
  }
  return known;
}

/**
 * Renames `from` to `to`, as mv would: the file keeps the owner group it was made with. False
 * (then it must be copied) across file systems, and into a set-group-ID directory, whose files
 * are meant to take the directory's group, as a file made there does.
 */
async function movedInto(from: string, to: string): Promise<boolean> {
  if (await isSetgidDir(dirname(to))) return false;
  try {
    await rename(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EXDEV') return false;
    throw error;
  }
}

/** Keeps the names written in one run unique: `a.webp`, `a-1.webp`, … */
export class NameReservations {
  private readonly taken = new Set<string>();

  reserve(name: string): string {
    let candidate = name;
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const extension = dot > 0 ? name.slice(dot) : '';
    for (let n = 1; this.taken.has(candidate); n += 1) candidate = `${stem}-${n}${extension}`;
    this.taken.add(candidate);
    return candidate;
  }
}
