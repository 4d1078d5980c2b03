/**
 * `npm run bench [-- a b c d e f g h i j k l m n o p q r s t u]`: runs the benches, each against its
 * baseline in the same run: a-d the API (GET throughput, PNG -> WebP end to end, submission
 * latency, RSS while uploading), e video, f-h conv (bench/cli.ts), i the mixed load test
 * (bench/load.ts), j and k Word documents -> PDF against cold `soffice --convert-to` runs and a
 * warm LibreOffice over UNO (bench/office.ts), l PDF page -> PNG against PDFium called directly
 * (bench/pdf-pages.ts), m-o the PostgreSQL store (m submission latency with 1,000,000
 * conversions: bench/postgres-submit.ts; n 200 png -> webp over two nodes on one database and one
 * S3 bucket (s3rver, bench/lib/s3.ts): bench/cluster-nodes.ts; o bench (a)'s GET throughput on
 * PostgreSQL against lowdb: bench/postgres-get-throughput.ts; all three need a PostgreSQL server,
 * see bench/lib/postgres.ts), p invoices -> PDF in both HTML modes against Chromium driven
 * directly and a cold chromium per file (bench/html.ts), q the daemon's RSS over 300 large images
 * with deploy/convd.service's allocator against glibc's malloc (bench/memory-soak.ts), r the
 * event-loop delay under attack (bench/event-loop-under-attack.ts), s 1 MiB of text and of
 * Markdown to five document formats against the fastest direct tool (bench/large-text.ts), t /healthz
 * and a keyed GET under 16 hostile Chromium pages against an idle daemon (bench/healthz-under-chromium.ts),
 * u a fourth account's small conversions while three keep every engine busy against the same on an
 * idle daemon (bench/fair-share.ts). It
 * prints one line per bench as it ends and a table at the end. Exits 1 when a target is missed
 * (or a figure is invalid), so a script can gate on it. Not among them, as it needs a folder of
 * real Word files: `npm run bench:page-count -- <folder>` (bench/page-count.ts), how many of
 * their PDFs have the page count Word saw.
 *
 * Every daemon is the compiled one (dist/, built by `npm run bench`) in its own process, with
 * its own temp data dir (and, on PostgreSQL, a database of its own); load generators run in
 * processes of their own. All are removed at the end, on Ctrl-C too. To profile the daemon
 * under a bench:
 *   BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- a
 * Figures swing with whatever else runs on the machine: benches (a) and (b) alternate rounds and
 * keep the best, and print CPU time per unit of work, which other load disturbs far less.
 */
import { availableParallelism, cpus } from 'node:os';
import { benchConvBatch, benchConvFormats, benchConvVersion } from './cli.ts';
import { benchClusterNodes } from './cluster-nodes.ts';
import { benchGetThroughput } from './get-throughput.ts';
import { benchHealthzUnderChromium } from './healthz-under-chromium.ts';
import { benchHtml } from './html.ts';
import { benchLargeText } from './large-text.ts';
import { benchLoad } from './load.ts';
import { benchMemorySoak } from './memory-soak.ts';
import { benchOfficeCold, benchOfficeWarm } from './office.ts';
import { benchPdfPages } from './pdf-pages.ts';
import { benchPostgresGetThroughput } from './postgres-get-throughput.ts';
import { benchPostgresSubmitLatency } from './postgres-submit.ts';
import { benchConvertEndToEnd } from './convert-e2e.ts';
import { benchEventLoopUnderAttack } from './event-loop-under-attack.ts';
import { benchFairShare } from './fair-share.ts';
import { benchSubmitLatency } from './submit-latency.ts';
import { benchUploadRss } from './upload-rss.ts';
import { benchVideo } from './video.ts';
import type { BenchResult } from './types.ts';

const BENCHES: Record<string, () => Promise<BenchResult>> = {
  a: benchGetThroughput,
  b: benchConvertEndToEnd,
  c: benchSubmitLatency,
  d: benchUploadRss,
  e: benchVideo,
  f: benchConvVersion,
  g: benchConvFormats,
  h: benchConvBatch,
  i: benchLoad,
  j: benchOfficeCold,
  k: benchOfficeWarm,
  l: benchPdfPages,
  m: benchPostgresSubmitLatency,
  n: benchClusterNodes,
  o: benchPostgresGetThroughput,
  p: benchHtml,
  q: benchMemorySoak,
  r: benchEventLoopUnderAttack,
  s: benchLargeText,
  t: benchHealthzUnderChromium,
  u: benchFairShare,
};

function line(result: BenchResult): string {
  return `(${result.id}) ${result.title}: ${result.figures} = ${result.ratio} (target ${result.target}) ${result.pass ? 'PASS' : 'FAIL'}`;
}

function table(results: BenchResult[]): string {
  const rows = [['bench', 'measured', 'ratio', 'target', 'result'], ...results.map((r) => [`(${r.id}) ${r.title}`, r.figures, r.ratio, r.target, r.pass ? 'PASS' : 'FAIL'])];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const format = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [format(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(format)].join('\n');
}

const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const unknown = wanted.filter((id) => !(id in BENCHES));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(' ')}\n`);
  process.exit(2);
}
const ids = wanted.length > 0 ? wanted : Object.keys(BENCHES);

process.stdout.write(`convd benches on ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown cpu'}), node ${process.version}\n\n`);
const results: BenchResult[] = [];
const started = performance.now();
for (const id of ids) {
  const benchStarted = performance.now();
  let result: BenchResult;
  try {
    result = await BENCHES[id]!();
  } catch (error) {
    result = { id, title: 'error', figures: error instanceof Error ? error.message : String(error), ratio: '-', target: '-', pass: false, notes: [] };
  }
  results.push(result);
  process.stdout.write(`${line(result)}\n`);
  for (const note of result.notes) process.stdout.write(`    ${note}\n`);
  process.stdout.write(`    (${((performance.now() - benchStarted) / 1000).toFixed(1)} s)\n`);
}
process.stdout.write(`\n${table(results)}\n\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
process.exitCode = results.every((r) => r.pass) ? 0 : 1;
