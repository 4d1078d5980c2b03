import { readdir, readFile } from 'node:fs/promises';

/** Resident memory of one process in bytes (VmRSS of /proc/<pid>/status), 0 when it is gone. */
export async function residentBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Pids of the direct children of `pid`, from every one of its threads (any thread may fork). */
export async function childrenOf(pid: number): Promise<number[]> {
  let tasks: string[];
  try {
    tasks = await readdir(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const lists = await Promise.all(tasks.map((tid) => readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '')));
  return lists.flatMap((list) => list.split(' ').filter(Boolean).map(Number));
}

/** Pids of every descendant of `pid` down to `depth` generations (Linux /proc), nearest first. */
export async function descendantsOf(pid: number, depth = 4): Promise<number[]> {
  if (depth === 0) return [];
  const children = await childrenOf(pid);
  const below = await Promise.all(children.map((child) => descendantsOf(child, depth - 1)));
  return [...children, ...below.flat()];
}

/**
 * Resident memory of a process and all its descendants (Linux /proc), so that a helper that
 * starts others (LibreOffice's launcher starts soffice.bin) is measured whole. Shared pages are
 * counted in each process: an overestimate, on the safe side for a limit.
 */
export async function residentBytesOfTree(pid: number, depth = 4): Promise<number> {
  const own = await residentBytes(pid);
  if (depth === 0) return own;
  const children = await childrenOf(pid);
  const theirs = await Promise.all(children.map((child) => residentBytesOfTree(child, depth - 1)));
  return theirs.reduce((sum, bytes) => sum + bytes, own);
}
