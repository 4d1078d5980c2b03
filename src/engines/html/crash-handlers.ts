import { readdir, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { lowerSessionOf } from '../process/group.ts';

/**
 * Chromium's crash reporter handlers (chrome_crashpad_handler) leave the browser's session: the
 * browser starts them through a double fork and a setsid of their own, and init adopts them. So
 * the session priority the launch wrapper lowered does not reach them (only the threads' nice
 * value, which they inherit), and they dump a renderer each time one crashes, which a hostile
 * page can make happen once a conversion. They keep their database in the browser's own folder,
 * which is how they are found: every process whose command line names that folder as its
 * `--database`. (Chromium has no switch that turns them off and still loads pages: the one for
 * tests, --disable-crashpad-for-testing, left every navigation hanging.)
 *
 * Returns the pids found, after asking for their sessions to be lowered.
 */
export async function lowerCrashHandlers(browserDir: string, niceness: number): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const mark = `--database=${browserDir}/`;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const pids = entries.filter((entry) => /^\d+$/.test(entry)).map(Number);
  const lines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  const handlers = pids.filter((_, index) => lines[index]!.includes(mark));
  for (const pid of handlers) lowerSessionOf(pid, niceness, () => commandLine(pid).includes(mark));
  return handlers;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}
