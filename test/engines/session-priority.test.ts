/**
 * Engines started together all run below the daemon as a session, where the daemon is an
 * unprivileged user: the kernel lets such a user change one autogroup's nice value per tenth of
 * a second machine-wide (EAGAIN otherwise), and of six engines started at once five had been
 * left at the daemon's priority. Checked through runProcess (every engine process and helper
 * goes the same way), also for the drop of long work to its lower niceness, and through the HTML
 * engine's browser wrapper. Run as an unprivileged user:
 * this one, or nobody (uid 65534, through setpriv) when the suite runs as root.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ENGINE_NICENESS, LONG_RUN_NICENESS } from '../../src/engines/process/group.ts';
import { HAS_SETPRIV } from '../helpers/engines-proc.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('../helpers/session-priority-child.ts', import.meta.url));
const ROOT_USER = process.getuid?.() === 0;
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

const skip = process.platform !== 'linux' || !existsSync('/proc/self/autogroup')
  ? 'no autogroup scheduling here'
  : ROOT_USER && !(HAS_SETPRIV && SETPRIV) ? 'runs as root and has no setpriv to run as another user' : false;

function runChild(mode: 'processes' | 'long' | 'wrapper'): Promise<string[]> {
  const node = [process.execPath, '--import', 'tsx', CHILD, mode];
  const [file, args] = ROOT_USER ? [SETPRIV!, ['--reuid=65534', '--regid=65534', '--clear-groups', '--', ...node]] : [node[0]!, node.slice(1)];
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, HOME: '/tmp' }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(stdout.trim().split('\n'));
    });
  });
}

describe('engines started together, by an unprivileged daemon', { skip }, () => {
  const cases = [
    { mode: 'processes', what: 'runProcess', nice: ENGINE_NICENESS },
    { mode: 'long', what: 'runProcess, each running long enough to drop', nice: LONG_RUN_NICENESS },
    { mode: 'wrapper', what: "the browser's wrapper", nice: ENGINE_NICENESS },
  ] as const;
  for (const { mode, what, nice } of cases) {
    it(`all six get the session priority asked for (${what}: nice ${nice})`, async () => {
      const lines = await runChild(mode);
      assert.equal(lines.length, 6, lines.join('\n'));
      for (const line of lines) assert.match(line, new RegExp(` nice ${nice}$`), lines.join('\n'));
    });
  }
});
