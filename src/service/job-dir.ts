import { mkdir, readdir, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { linkOrCopy } from '../engines/process/link-or-copy.ts';
import { engineFileStem } from '../inputs/file-name.ts';

/** Where one engine run reads its input and writes its output. */
export interface JobFiles {
  dir: string;
  inputPath: string;
  outputPath: string;
  /** The output's own directory inside `dir`, made when source and target share an extension. */
  outputDir?: string;
}

/** A format's extension as a file name's, or `bin` for one that could name more than an extension. */
export function safeExtension(extension: string): string {
  return /^[a-z0-9]{1,16}$/i.test(extension) ? extension.toLowerCase() : 'bin';
}

/**
 * Fills a run's own directory (empty, mode 0700): the input as `<user's name>.<source
 * extension>` (a hard link to the stored file, a copy across file systems) and the output's path
 * as `<user's name>.<target extension>` beside it, so that an engine, and a document printing its
 * own file name, sees the user's name and never a conversion id or where the data dir is. Where
 * source and target share an extension (pdf -> pdf), the output goes into `out/` so the two
 * names differ; elsewhere no directory more is made (a directory is an inode created and freed,
 * the dearest file-system work of a small conversion). The caller gives the directory back (RunDirs).
 */
export async function prepareJobFiles(dir: string, storedInput: string | Buffer, originalName: string, sourceExtension: string, targetExtension: string): Promise<JobFiles> {
  const stem = engineFileStem(originalName);
  const source = safeExtension(sourceExtension);
  const target = safeExtension(targetExtension);
  const inputPath = join(dir, `${stem}.${source}`);
  // An input kept in the conversion's record (its bytes) is written there instead.
  if (typeof storedInput === 'string') await linkOrCopy(storedInput, inputPath);
  else await writeFile(inputPath, storedInput, { mode: 0o600, flag: 'wx' });
  if (source !== target) return { dir, inputPath, outputPath: join(dir, `${stem}.${target}`) };
  const outputDir = join(dir, 'out');
  await mkdir(outputDir, { mode: 0o700 });
  return { dir, inputPath, outputPath: join(outputDir, `${stem}.${target}`), outputDir };
}

/**
 * Run directories, each kept for a later run once its run has left it empty. A directory is an
 * inode allocated and freed: on an ext4 without a journal (as on the development box) that scan
 * past recently freed inodes was 6 % of the daemon's CPU for a small image, one mkdir per run.
 * A directory goes back only after a run that succeeded (an engine stopped by a time limit or a
 * cancel may still be writing) and when it is seen empty (a run of another account gets nothing
 * of this one's); what an engine left in it takes the directory with it, removed recursively.
 * The process's own: `clearScratch` empties the store's work area at every start.
 */
export class RunDirs {
  private readonly free: string[] = [];

  constructor(
    /** A new, empty directory (BlobStore.workDirFor). */
    private readonly make: () => Promise<string>,
    /** Kept at most: as many as runs at once, give or take, past that removed. */
    private readonly keep = 32,
  ) {}

  /** An empty directory for one run: a kept one, or a new one. */
  async take(): Promise<string> {
    return this.free.pop() ?? (await this.make());
  }

  /**
   * The run is done with `dir`. Once the output has become the result, what is left is what
   * prepareJobFiles made (`made`): removed name by name, and the directory kept if nothing else is
   * in it. Anything an engine left beside them, a name that is not there, or no `made` (files
   * never made, or a run that failed): the directory is removed recursively.
   */
  async give(dir: string, made?: Pick<JobFiles, 'inputPath' | 'outputDir'>): Promise<void> {
    if (made) {
      try {
        await unlink(made.inputPath);
        if (made.outputDir) await rmdir(made.outputDir);
        if (this.free.length < this.keep && (await readdir(dir)).length === 0) {
          this.free.push(dir);
          return;
        }
      } catch {
        // Not as prepareJobFiles left it: whatever is there goes below.
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}
