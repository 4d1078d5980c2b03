/**
 * `npm run bench [-- NAME ...]`: runs the benches (all of them, or those named), each against its
 * baseline in the same run. bench/catalog.ts lists them, and `npm run bench -- --list` prints
 * that list: each has a name for what it measures (`npm run bench -- html-invoices`) and the
 * letter it was first known by, taken as well (`npm run bench -- p`). docs/benchmarks.md has
 * the figures and how each is judged. The three on PostgreSQL (postgres-submit, cluster-nodes,
 * postgres-get-throughput) need a PostgreSQL server, see bench/lib/postgres.ts; cluster-nodes runs
 * an S3 server of its own (s3rver, bench/lib/s3.ts). It prints one line per bench as it ends and
 * a table at the end. Exits 1 when a target is missed (or a figure is invalid), so a script can
 * gate on it; 2 on a name it does not know. Not among them, as it needs a folder of real Word
 * files: `npm run bench:page-count -- <folder>` (bench/page-count.ts), how many of their PDFs
 * have the page count Word saw.
 *
 * Every daemon is the compiled one (dist/, built by `npm run bench`) in its own process, with
 * its own temp data dir (and, on PostgreSQL, a database of its own); load generators run in
 * processes of their own. All are removed at the end, on Ctrl-C too. To profile the daemon
 * under a bench:
 *   BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- get-throughput
 * Figures swing with whatever else runs on the machine: get-throughput and convert-e2e alternate
 * rounds and keep the best, and print CPU time per unit of work, which other load disturbs far less.
 */
import { availableParallelism, cpus } from 'node:os';
import { BENCHES, benchNamed, type Bench } from './catalog.ts';
import type { BenchResult } from './types.ts';

interface Ran {
  bench: Bench;
  result: BenchResult;
}

function line({ bench, result }: Ran): string {
  return `${bench.name}: ${result.title}: ${result.figures} = ${result.ratio} (target ${result.target}) ${result.pass ? 'PASS' : 'FAIL'}`;
}

function table(ran: Ran[]): string {
  const rows = [['bench', 'measured', 'ratio', 'target', 'result'], ...ran.map(({ bench, result: r }) => [`${bench.name}: ${r.title}`, r.figures, r.ratio, r.target, r.pass ? 'PASS' : 'FAIL'])];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const format = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [format(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(format)].join('\n');
}

function list(): string {
  const width = Math.max(...BENCHES.map((bench) => bench.name.length + bench.letter.length + 3));
  return [
    'npm run bench [-- NAME ...]: runs the benches named (a name, or its letter), else all of them:',
    ...BENCHES.map((bench) => `  ${`${bench.name} (${bench.letter})`.padEnd(width)}  ${bench.measures}`),
  ].join('\n');
}

const args = process.argv.slice(2);
if (args.some((arg) => arg === '--list' || arg === '--help' || arg === '-h')) {
  process.stdout.write(`${list()}\n`);
  process.exit(0);
}
const wanted = args.filter((arg) => !arg.startsWith('-'));
const unknown = wanted.filter((word) => benchNamed(word) === undefined);
if (unknown.length > 0) {
  process.stderr.write(`unknown bench ${unknown.join(', ')}\n${list()}\n`);
  process.exit(2);
}
const chosen = wanted.length > 0 ? [...new Set(wanted.map((word) => benchNamed(word)!))] : BENCHES;

process.stdout.write(`convd benches on ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown cpu'}), node ${process.version}\n\n`);
const ran: Ran[] = [];
const started = performance.now();
for (const bench of chosen) {
  const benchStarted = performance.now();
  let result: BenchResult;
  try {
    result = await bench.run();
  } catch (error) {
    result = { title: 'error', figures: error instanceof Error ? error.message : String(error), ratio: '-', target: '-', pass: false, notes: [] };
  }
  ran.push({ bench, result });
  process.stdout.write(`${line({ bench, result })}\n`);
  for (const note of result.notes) process.stdout.write(`    ${note}\n`);
  process.stdout.write(`    (${((performance.now() - benchStarted) / 1000).toFixed(1)} s)\n`);
}
process.stdout.write(`\n${table(ran)}\n\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
process.exitCode = ran.every(({ result }) => result.pass) ? 0 : 1;
