import { readdirSync } from 'node:fs';
import { lowerSessionOf } from '../process/group.ts';
import { processTitle } from '../process/proc-readings.ts';

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
export function lowerCrashHandlers(browserDir: string, niceness: number): number[] {
  if (process.platform !== 'linux') return [];
  const mark = `--database=${browserDir}/`;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  // Read as the engine watches read /proc (proc-readings.ts): every process's command line, 0.5 ms
  // for 85 processes here, where reading them asynchronously took 5.6-11 ms of CPU.
  const handlers = entries.filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => processTitle(pid).includes(mark));
  for (const pid of handlers) lowerSessionOf(pid, niceness, () => processTitle(pid).includes(mark));
  return handlers;
}
