/** The CPU a daemon's engine host processes use: where its conversions' own work is done. */
import { readFile } from 'node:fs/promises';
import { cpuTimeMs } from './cpu.ts';

/** Pids of the daemon's engine host processes (its children titled convd-engine-host). */
export async function hostPids(daemonPid: number): Promise<number[]> {
  const children = (await readFile(`/proc/${daemonPid}/task/${daemonPid}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean).map(Number);
  const hosts: number[] = [];
  for (const pid of children) {
    const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (command.startsWith('convd-engine-host')) hosts.push(pid);
  }
  return hosts;
}

/** CPU time of all of `pids` so far, in ms; a process that has gone counts 0. */
export async function cpuOf(pids: number[]): Promise<number> {
  let total = 0;
  for (const pid of pids) total += await cpuTimeMs(pid).catch(() => 0);
  return total;
}
