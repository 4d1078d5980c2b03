import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { linkOrCopy } from '../engines/process/link-or-copy.ts';
import { engineFileStem } from '../inputs/file-name.ts';

/** Where one engine run reads its input and writes its output. */
export interface JobFiles {
  dir: string;
  inputPath: string;
  outputPath: string;
}

/** A format's extension as a file name's, or `bin` for one that could name more than an extension. */
function safeExtension(extension: string): string {
  return /^[a-z0-9]{1,16}$/i.test(extension) ? extension.toLowerCase() : 'bin';
}

/**
 * Fills a run's own directory (new, empty, mode 0700): the input as `<user's name>.<source
 * extension>` (a hard link to the stored file, a copy across file systems) and the output's path
 * as `out/<user's name>.<target extension>`, so that an engine, and a document printing its own
 * file name, sees the user's name and never a conversion id or where the data dir is. The output
 * has a directory of its own: source and target may share an extension. The caller removes `dir`.
 */
export async function prepareJobFiles(dir: string, storedInput: string, originalName: string, sourceExtension: string, targetExtension: string): Promise<JobFiles> {
  const stem = engineFileStem(originalName);
  const inputPath = join(dir, `${stem}.${safeExtension(sourceExtension)}`);
  await linkOrCopy(storedInput, inputPath);
  await mkdir(join(dir, 'out'), { mode: 0o700 });
  return { dir, inputPath, outputPath: join(dir, 'out', `${stem}.${safeExtension(targetExtension)}`) };
}

export async function removeJobDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
