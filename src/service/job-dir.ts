import { mkdir, readdir, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KeptDirs } from '../engines/process/kept-dirs.ts';
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

/** The name an engine's input goes by where the engine shows one: `<user's name>.<source extension>`. */
export function engineInputName(originalName: string, sourceExtension: string): string {
  return `${engineFileStem(originalName)}.${safeExtension(sourceExtension)}`;
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
  const inputPath = join(dir, engineInputName(originalName, sourceExtension));
  // An input kept in the conversion's record (its bytes) is written there instead.
  if (typeof storedInput === 'string') await linkOrCopy(storedInput, inputPath);
  else await writeFile(inputPath, storedInput, { mode: 0o600, flag: 'wx' });
  if (source !== target) return { dir, inputPath, outputPath: join(dir, `${stem}.${target}`) };
  const outputDir = join(dir, 'out');
  await mkdir(outputDir, { mode: 0o700 });
  return { dir, inputPath, outputPath: join(outputDir, `${stem}.${target}`), outputDir };
}

/**
 * The service's run directories (in the store's work area), kept for later runs as KeptDirs
 * keeps any. A directory goes back only after a run that succeeded, and with what
 * prepareJobFiles made in it removed by name and nothing else there. The process's own:
 * `clearScratch` empties the store's work area at every start.
 */
export class RunDirs {
  private readonly kept: KeptDirs;

  constructor(make: () => Promise<string>, keep = 32) {
    this.kept = new KeptDirs(make, keep);
  }

  take(): Promise<string> {
    return this.kept.take();
  }

  /**
   * The run is done with `dir`. Once the output has become the result, what is left is what
   * prepareJobFiles made (`made`): removed name by name, and the directory kept if nothing else is
   * in it. Anything an engine left beside them, a name that is not there, or no `made` (files
   * never made, or a run that failed): the directory is removed recursively.
   */
  give(dir: string, made?: Pick<JobFiles, 'inputPath' | 'outputDir'>): Promise<void> {
    return this.kept.give(dir, made && (async () => {
      await unlink(made.inputPath);
      if (made.outputDir) await rmdir(made.outputDir);
      return (await readdir(dir)).length === 0;
    }));
  }
}
