import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** Shared by the engine suites: what the kernel says about processes (Linux /proc). */

interface ProcInfo {
  pid: number;
  state: string;
  pgrp: number;
  command: string;
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command sits in parentheses and may itself contain spaces or ')'.
    const close = stat.lastIndexOf(')');
    const command = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    return { pid, state: fields[0] ?? '?', pgrp: Number(fields[2]), command };
  } catch {
    return undefined;
  }
}

/** Processes in process group `pgid`, zombies included. */
export function processesInGroup(pgid: number): ProcInfo[] {
  const found: ProcInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = readProc(Number(entry));
    if (info && info.pgrp === pgid) found.push(info);
  }
  return found;
}

/**
 * What is left of a process group we started: members still running, plus the leader if it was
 * not reaped (a zombie of ours). Grandchildren orphaned by the kill are reparented to PID 1 and
 * may linger as zombies until it reaps them; they are dead and not ours, so they do not count.
 */
export function leftoversOfGroup(pgid: number): ProcInfo[] {
  return processesInGroup(pgid).filter((p) => p.pid === pgid || (p.state !== 'Z' && p.state !== 'X'));
}

/** True while `pid` exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  const info = readProc(pid);
  return info !== undefined && info.state !== 'Z' && info.state !== 'X';
}

/** Our own children named `name` (e.g. ffmpeg) that exist at all, zombies included. */
export function childrenNamed(name: string): ProcInfo[] {
  const found: ProcInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = readProc(Number(entry));
    if (!info || info.command !== name) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      if (ppid === process.pid) found.push(info);
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Whether util-linux setpriv is where runProcess looks for it (src/engines/subprocess.ts): the
 * parent-death signal of `dieWithParent` exists only then.
 */
export const HAS_SETPRIV = process.platform === 'linux' && ['/usr/bin/setpriv', '/bin/setpriv'].some((path) => existsSync(path));
