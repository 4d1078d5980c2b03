import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess, type RunResult } from '../subprocess.ts';
import type { FilterValue } from './pdf-options.ts';
import { makeProfile, removeProfile } from './profiles.ts';

/** bridge.py's exit status when soffice crashed (its instance while opening a document, or the one-off run). */
export const CRASHED = 3;

/** One document through a LibreOffice of its own (bridge.py --convert-to). */
export interface OneOffConversion {
  /** The Python with `uno`, bridge.py, and the soffice.bin it runs. */
  python: string;
  bridge: string;
  sofficeBin: string;
  /** setpriv with --pdeathsig for soffice.bin, where there is one. */
  setpriv: string | null;
  /** The document, under the name it is opened by (the user's). */
  input: string;
  /** An empty directory: the output is written there, named after the input. */
  outDir: string;
  target: string;
  inputFilter: string;
  inputFilterOptions?: string;
  outputFilter: string;
  outputFilterOptions?: string;
  /** The document's family's flat OpenDocument format (FLAT_FORMATS), the first run's output. */
  flat: { extension: string; filter: string };
  /** The PDF export's settings, as the warm path gives them. */
  filterData?: Record<string, FilterValue>;
  /** The job's: its time limit or cancel kills the process group. */
  signal: AbortSignal;
  /** The instances' memory limit, as an address-space limit (prlimit) here. */
  memoryLimitMb: number;
  env: NodeJS.ProcessEnv;
}

/** The one-off run did not write the file: why, in words for the user. */
export class SecondWayFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SecondWayFailed';
  }
}

/**
 * The second way through for a document whose load crashed a warm instance: `soffice --convert-to`
 * in a fresh profile of its own (the instances' settings: no links, no macros, no recalculation),
 * as the engine's other processes run: a process group killed with the job, dying with the
 * daemon, niced, memory-limited. The profile goes whatever happens (a daemon killed meanwhile
 * leaves it to the next pool's sweep of orphaned profiles). Resolves with the file written;
 * rejects with SecondWayFailed, or the signal's reason when the job was stopped.
 */
export async function convertOnce(run: OneOffConversion): Promise<string> {
  const profile = await makeProfile();
  try {
    const result = await runProcess(run.python, [
      '-u', run.bridge, '--convert-to', run.sofficeBin, profile, run.input, run.outDir,
      convertTo(run), run.inputFilterOptions ? `${run.inputFilter}:${run.inputFilterOptions}` : run.inputFilter,
      `${run.flat.extension}:${run.flat.filter}`,
      ...(run.setpriv ? [run.setpriv] : []),
    ], { signal: run.signal, dieWithParent: true, niceness: ENGINE_NICENESS, memoryLimitMb: run.memoryLimitMb, env: run.env });
    const written = (await readdir(run.outDir)).filter((name) => name.endsWith(`.${run.target}`));
    if (result.code === 0 && written.length === 1) return join(run.outDir, written[0]!);
    throw new SecondWayFailed(reasonOf(result, run.target));
  } finally {
    await removeProfile(profile);
  }
}

/**
 * `--convert-to`'s argument: extension, export filter and its options; the PDF export's settings
 * as the JSON LibreOffice takes there since 7.4 (each value with its UNO type).
 */
function convertTo(run: OneOffConversion): string {
  const base = `${run.target}:${run.outputFilter}`;
  if (run.filterData) {
    const typed = Object.fromEntries(Object.entries(run.filterData).map(([name, value]) => [name, {
      type: typeof value === 'boolean' ? 'boolean' : typeof value === 'number' ? 'long' : 'string',
      value: String(value),
    }]));
    return `${base}:${JSON.stringify(typed)}`;
  }
  return run.outputFilterOptions ? `${base}:${run.outputFilterOptions}` : base;
}

/** LibreOffice's own words where it has some ("Error: source file could not be loaded"), no path. */
function reasonOf(result: RunResult, target: string): string {
  if (result.code === CRASHED) return 'it crashed as well';
  const said = /^Error: ([^/\n]+)$/m.exec(result.stderrTail)?.[1]?.trim();
  if (said) return `LibreOffice said: ${said}`;
  if (result.code !== 0) return `LibreOffice ended there with ${lastLines(result.stderrTail, 1) || `exit code ${result.code ?? result.signal}`}`;
  return `LibreOffice wrote no ${target} file there`;
}
