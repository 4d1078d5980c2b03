/**
 * The baseline of the pdf-merge bench, run as a process of its own at the engine host's priority
 * (see bench/pdf-merge.ts): the project's qpdf (WebAssembly, in a worker thread:
 * src/engines/pdfops/qpdf.ts) merging the PDFs in one run.
 *
 * runQpdf appends the input and output paths itself (`qpdf [options] /in/<input> /out/<output>`),
 * so `--empty` cannot be used as qpdf's documentation writes a merge: the appended input would be
 * taken for the output. The first file is the input instead, `.` in the page list, and every
 * file needs its range: this build of qpdf reads the argument after a file as a range
 * ("invalid range syntax" without `1-z`). Only the input's directory is mounted (as /in), so all
 * the files are in one directory.
 *
 * argv[2]: a DirectPlan as JSON. Prints `{"ready":true}` after the warm-up merges, then for each
 * line `round <k>` on stdin writes `<outputDir>/<k>.pdf` and prints `{"ms":…,"cpuMs":…}`.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { finishingArguments } from '../../src/engines/pdfops/qpdf-passes.ts';
import { runQpdf } from '../../src/engines/pdfops/qpdf.ts';
import type { DirectRound } from './direct-rounds.ts';

export interface DirectPlan {
  inputDir: string;
  /** File names in `inputDir`, in the merged order. */
  names: string[];
  outputDir: string;
  warmup: number;
}

/**
 * qpdf's options for merging `names` as convd writes a merge (its default variant, `compress`:
 * object streams and recompressed streams; finishingArguments is convd's own), the first file the
 * input (`.`), the others after it.
 */
function mergeOptions(names: readonly string[]): string[] {
  return ['--decrypt', ...finishingArguments('compress', {}), '--pages', '.', '1-z', ...names.slice(1).flatMap((name) => [`/in/${name}`, '1-z']), '--'];
}

async function merge(plan: DirectPlan, output: string): Promise<void> {
  const result = await runQpdf(mergeOptions(plan.names), join(plan.inputDir, plan.names[0]!), output, new AbortController().signal);
  // 3: warnings only, the file is written.
  if (result.code !== 0 && result.code !== 3) throw new Error(`qpdf exited with ${result.code}: ${result.messages.join(' / ')}`);
}

const plan = JSON.parse(process.argv[2]!) as DirectPlan;
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

await mkdir(plan.outputDir, { recursive: true });
for (let i = 0; i < plan.warmup; i++) await merge(plan, join(plan.outputDir, `warmup-${i}.pdf`));
say({ ready: true });

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const round = /^round (\d+)$/.exec(line.trim())?.[1];
  if (round === undefined) continue;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await merge(plan, join(plan.outputDir, `${round}.pdf`));
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  say({ ms, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies DirectRound);
}
