/** Finding the HTML engine's browsers from the outside, for tests that kill them or wait for their end. */
import { execFileSync } from 'node:child_process';

/**
 * The process groups of the browsers `parent` started: Chromium's main process is its child (the
 * wrapper execs it) and leads a group of its own, which holds its renderers too.
 */
export function browserGroupsOf(parent: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(parent), 'chromium'], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Live members of a process group (a zombie is dead: its parent, or init, reaps it). */
export function liveMembers(pgid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,stat=', '-g', String(pgid)], { encoding: 'utf8' }).split('\n')
      .map((line) => line.trim().split(/\s+/)).filter(([pid, stat]) => pid && stat && !stat.startsWith('Z')).map(([pid]) => Number(pid));
  } catch {
    return [];
  }
}
