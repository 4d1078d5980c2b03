import { constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** True for a regular file this process may execute. */
export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` in the directories of a PATH value, or undefined. */
export async function searchPath(name: string, pathVariable: string): Promise<string | undefined> {
  for (const dir of pathVariable.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}
