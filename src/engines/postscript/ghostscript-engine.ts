import { mkdtemp, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair, FormatInfo } from '../pairs.ts';
import { checkOutputSize, watchOutputCap } from '../output-cap.ts';
import { engineEnvironment, ENGINE_NICENESS } from '../process/group.ts';
import { findProgram } from '../process/path-search.ts';
import { firstLine } from '../process/first-line.ts';
import { ProgressWatch, watchCpu, watchFileGrowth } from '../process/progress-watch.ts';
import { lastLines, runProcess } from '../subprocess.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import { formatBytes } from '../units.ts';

export const POSTSCRIPT_FORMATS: FormatInfo[] = [
  { key: 'eps', extensions: ['eps', 'epsf', 'epsi'], mime: 'application/postscript' },
  { key: 'ps', extensions: ['ps'], mime: 'application/postscript' },
  // Illustrator files: PDF with Illustrator's private data since version 9, PostScript before.
  { key: 'ai', extensions: ['ai'], mime: 'application/illustrator' },
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
];
const SOURCES = ['eps', 'ps', 'ai'] as const;

export const GHOSTSCRIPT_INSTALL_HINT = 'install Ghostscript (Debian and Ubuntu: `apt-get install ghostscript`) and restart convd, or set CONVD_GHOSTSCRIPT_PATH';

export interface GhostscriptEngineOptions {
  /** Memory of one Ghostscript run, MiB (engine_memory_mb); none when unset. */
  processMemoryMb?: number;
  /** A run whose PDF has not grown for this long ends early with `timeout` (postscript_stall_timeout); 0 or unset: never. */
  stallMs?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * A PostScript error (`Error: /syntaxerror in ...`, `/invalidfileaccess` under -dSAFER) is the
 * program's fault, as is a PDF Ghostscript cannot open; VMerror is its memory (checked first).
 */
const INPUT_ERROR = /Error: \/|cannot (open|find)|No pages|not a PDF|Couldn't initialise file|damaged|Format error/i;
const OUT_OF_MEMORY = /VMerror|out of memory|Cannot allocate/i;

/**
 * EPS, PostScript and Illustrator files to PDF with Ghostscript's pdfwrite device: a process of
 * its own, -dSAFER (no file access but its input and output, no device or operator that runs a
 * command), in a fresh directory, under the job's time, memory and output caps. PDF is a faithful
 * step: the registry chains on to page images and text through it.
 */
export function createGhostscriptEngine(settings: GhostscriptEngineOptions = {}): Engine {
  let gs: string | undefined;
  return {
    name: 'postscript',
    async probe(): Promise<EngineStatus> {
      gs = undefined;
      const env = settings.env ?? process.env;
      const found = await findProgram('gs', 'CONVD_GHOSTSCRIPT_PATH', env);
      if (!found) return { name: 'postscript', available: false, detail: `Ghostscript not found: ${GHOSTSCRIPT_INSTALL_HINT}` };
      try {
        const version = await firstLine(found, ['--version']);
        gs = found;
        return { name: 'postscript', available: true, binary: found, version, detail: 'EPS, PostScript and Illustrator files to PDF, -dSAFER' };
      } catch (error) {
        return { name: 'postscript', available: false, binary: found, detail: `Ghostscript does not run: ${error instanceof Error ? error.message : String(error)}` };
      }
    },
    pairs: (): ConversionPair[] => (gs
      ? SOURCES.map((source) => ({ source, target: 'pdf', engine: 'postscript', kind: 'pdf' as const, options: [], variants: [], intermediate: true }))
      : []),
    formats: () => POSTSCRIPT_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!gs) throw new ConversionFailure('internal_error', 'The postscript engine was not probed or Ghostscript is unavailable.');
      return toPdf(gs, job, settings);
    },
  };
}

async function toPdf(gs: string, job: EngineJob, settings: GhostscriptEngineOptions): Promise<EngineOutput> {
  job.onProgress(0);
  // A directory of its own: the one Ghostscript may write in besides its output.
  const work = await mkdtemp(join(dirname(job.outputPath), 'gs-'));
  const args = [
    // PostScript's own error report goes to stdout: into stderr with the rest, where it is read.
    '-q', '-dSAFER', '-dBATCH', '-dNOPAUSE', '-dNOPROMPT', '-sstdout=%stderr',
    '-sDEVICE=pdfwrite',
    // An EPS is one drawing: its page is its bounding box, not a sheet of paper around it.
    ...(job.source === 'eps' ? ['-dEPSCrop'] : []),
    `-sOutputFile=${job.outputPath}`,
    '-f', job.inputPath,
  ];
  const capped = watchOutputCap(job.outputPath, job.maxOutputBytes, job.signal);
  // Progress is the PDF growing (Ghostscript prints no page numbers for PostScript input, with or
  // without -q): pdfwrite writes each page as it ends (the file's header with the first), and a
  // heavy page's drawing as its buffer fills (a page of 8 million strokes grew the file 2.5 MB/s
  // throughout).
  // A page that draws a little at a time shows nothing until it ends: the stall window is for
  // that page as a whole, in Ghostscript's processor time.
  let cpu: ReturnType<typeof watchCpu> | undefined;
  const stall = new ProgressWatch({
    stallMs: settings.stallMs,
    cpuMs: () => cpu?.ms(),
    describe: () => `Ghostscript's PDF stayed at ${formatBytes(growth.size())}, the program running on without drawing anything`,
  });
  const growth = watchFileGrowth(job.outputPath, stall);
  const signal = AbortSignal.any([capped.signal, stall.signal]);
  let said: string;
  let code: number | null;
  let exitSignal: string | null;
  try {
    const result = await runProcess(gs, args, {
      cwd: work,
      env: engineEnvironment({ TMPDIR: work }),
      signal,
      timeoutMs: job.timeLimitMs,
      dieWithParent: true,
      niceness: ENGINE_NICENESS,
      memoryLimitMb: settings.processMemoryMb,
      onSpawn: (pid) => {
        if (settings.stallMs) cpu = watchCpu(pid);
      },
    });
    const stderr = result.stderrTail.split(job.inputPath).join('the input').split(job.outputPath).join('the output').split(work).join('.');
    // `Error: /invalidfileaccess in --file--` says it; the operand and execution stacks after it do not.
    said = /^Error: .*$/m.exec(stderr)?.[0] ?? lastLines(stderr, 2);
    code = result.code;
    exitSignal = result.signal;
  } finally {
    capped.stop();
    growth.stop();
    cpu?.stop();
    stall.stop();
    await rm(work, { recursive: true, force: true });
  }
  if (code !== 0) {
    if (OUT_OF_MEMORY.test(said)) throw new ConversionFailure('memory_limit', `Ghostscript needed more memory than its limit of ${settings.processMemoryMb} MB.`);
    if (INPUT_ERROR.test(said)) throw new ConversionFailure('input_invalid', `The ${job.source.toUpperCase()} file could not be read: ${said}`);
    throw new ConversionFailure('conversion_failed', `Ghostscript failed (${code === null ? `killed by ${exitSignal}` : `exit ${code}`})${said ? `: ${said}` : '.'}`);
  }
  const size = await stat(job.outputPath).then((info) => info.size, () => 0);
  if (size === 0) throw new ConversionFailure('input_invalid', `The ${job.source.toUpperCase()} file draws no page.`);
  checkOutputSize(size, job.maxOutputBytes);
  job.onProgress(100);
  return { size };
}
