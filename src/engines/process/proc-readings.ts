import { readdirSync, readFileSync } from 'node:fs';

/*
 * Everything here reads /proc, and reads it synchronously: the kernel makes a /proc file in
 * memory at the read, in microseconds, while an asynchronous read is four calls through libuv's
 * threads (open, stat, read, close). The watches call these several times a second for each
 * running engine: one reading of a LibreOffice instance's tree (two processes, thirteen threads) cost
 * the daemon 2.96-3.4 ms of CPU asynchronously on a 2-core VM, where each hop to the thread pool costs
 * 45-75 us, against 0.12-0.13 ms read here (docs/benchmarks.md, "2026-12-06, later").
 */

/** A /proc file's text, '' when the process is gone (or the file cannot be read). */
export function procText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Resident memory of one process in bytes (VmRSS of /proc/<pid>/status, in kB whatever the page size), 0 when it is gone. */
export function residentBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(procText(`/proc/${pid}/status`))?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

/** The command line of a process as /proc has it (arguments NUL-separated, or one string a process rewrote), '' when it is gone. */
export function processTitle(pid: number): string {
  return procText(`/proc/${pid}/cmdline`);
}

/** Pids of the direct children of `pid`, from every one of its threads (any thread may fork). */
export function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((tid) => procText(`/proc/${pid}/task/${tid}/children`).split(' ').filter(Boolean).map(Number));
}

/** Pids of every descendant of `pid` down to `depth` generations (Linux /proc), nearest first. */
export function descendantsOf(pid: number, depth = 4): number[] {
  if (depth === 0) return [];
  const children = childrenOf(pid);
  return [...children, ...children.flatMap((child) => descendantsOf(child, depth - 1))];
}

/**
 * Resident memory of a process and all its descendants (Linux /proc), so that a helper that
 * starts others (LibreOffice's bridge starts soffice.bin) is measured whole. Shared pages are
 * counted in each process: an overestimate, on the safe side for a limit.
 */
export function residentBytesOfTree(pid: number, depth = 4): number {
  const own = residentBytes(pid);
  if (depth === 0) return own;
  return childrenOf(pid).reduce((sum, child) => sum + residentBytesOfTree(child, depth - 1), own);
}

/** Linux's USER_HZ, the unit of /proc's CPU times: 100 on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/**
 * The fields of /proc/<pid>/stat from its state on (field 3: the state is [0], utime [11], stime
 * [12]), read after the command's name, which may hold spaces and parentheses; undefined when the
 * process is gone.
 */
function statFields(pid: number): string[] | undefined {
  const stat = procText(`/proc/${pid}/stat`);
  return stat === '' ? undefined : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User and system time of a process so far, ms (its threads together); undefined where /proc has none. */
export function processCpuMs(pid: number): number | undefined {
  const fields = statFields(pid);
  if (!fields) return undefined;
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
}

/**
 * True once `pid` has exited: gone from /proc, or a zombie its parent has not yet reaped (the
 * kernel closed its files and pipes before it became one: what talked to it has already seen EOF).
 */
export function processEnded(pid: number): boolean {
  const fields = statFields(pid);
  return !fields || fields[0] === 'Z';
}
