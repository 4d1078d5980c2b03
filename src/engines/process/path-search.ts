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

/**
 * A program an engine runs: the path the variable `variable` names (undefined when that is no
 * executable file: a configured path is never passed over for another), else `name` on PATH.
 */
export async function findProgram(name: string, variable: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const configured = env[variable];
  if (configured) return (await isExecutableFile(configured)) ? configured : undefined;
  return searchPath(name, env.PATH ?? '');
}
