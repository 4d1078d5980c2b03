import { readdir, readFile } from 'node:fs/promises';
import { procText, processCpuMs } from '../../src/engines/process/proc-readings.ts';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on every Linux that Node supports. */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) a process has used so far, in ms. Throughput on a shared machine
 * swings with whatever else runs; CPU time per request does not, so benches report both.
 */
export async function cpuTimeMs(pid: number): Promise<number> {
  return (await cpuTimesMs(pid)).own;
}

/**
 * CPU time of a process so far, in ms: its own (user + system), and that of the children it has
 * waited for (cutime + cstime: the programs it ran and reaped, e.g. OCRmyPDF's Tesseract).
 */
export async function cpuTimesMs(pid: number): Promise<{ own: number; children: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ms = (first: number) => ((Number(fields[first]) + Number(fields[first + 1])) * 1000) / TICKS_PER_SECOND;
  return { own: ms(11), children: ms(13) };
}

/**
 * CPU time the whole machine has spent busy so far (every core's user, nice, system, irq,
 * softirq and steal time from /proc/stat; idle and iowait left out), in ms. A round's share tells
 * whether its side was held back by the cores or waited on something else.
 */
export async function machineBusyMs(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time (user + system, ms) of every process now running, by pid, with its program's name
 * (read as the engines' watches read /proc: src/engines/process/proc-readings.ts).
 */
export async function everyProcessCpuMs(): Promise<Map<number, { name: string; ms: number }>> {
  const readings = new Map<number, { name: string; ms: number }>();
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const ms = processCpuMs(pid);
    // Undefined: it ended between the listing and the read.
    if (ms !== undefined) readings.set(pid, { name: procText(`/proc/${pid}/comm`).trim(), ms });
  }
  return readings;
}

/**
 * Which programs the CPU between two readings of everyProcessCpuMs went to: ms by the name `label`
 * gives a process (its program's name, or a role the caller knows it by: the daemon, the bench), largest first. A process
 * that ended in between is not counted.
 */
export function cpuByProgram(
  before: Map<number, { name: string; ms: number }>,
  after: Map<number, { name: string; ms: number }>,
  label: (pid: number, name: string) => string,
): [string, number][] {
  const totals = new Map<string, number>();
  for (const [pid, reading] of after) {
    const used = reading.ms - (before.get(pid)?.ms ?? 0);
    const name = label(pid, reading.name);
    if (used > 0) totals.set(name, (totals.get(name) ?? 0) + used);
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
}
