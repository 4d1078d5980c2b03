import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';

/**
 * What runs left in a data dir's work area (`<dataDir>/blobs/work`): every file, however deep,
 * relative to it. Empty directories are not listed: an emptied run directory is kept for the
 * next run (RunDirs in src/service/job-dir.ts), and holds nothing of the one before.
 */
export async function workFiles(dataDir: string): Promise<string[]> {
  const work = join(dataDir, 'blobs', 'work');
  const entries = await readdir(work, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => !entry.isDirectory()).map((entry) => relative(work, join(entry.parentPath, entry.name))).sort();
}
