import { readFile } from 'node:fs/promises';

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
