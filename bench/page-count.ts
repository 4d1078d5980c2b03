/**
 * Page-count fidelity on real Word files:
 *   node --import tsx bench/page-count.ts <folder> [--json] [--min-share <percent>]
 *        [--fontconfig <file>] [--pdf-dir <dir>]
 * (`npm run bench:page-count -- <folder> ...` builds dist/ first). Every .docx under the folder
 * that Word saved last (bench/lib/word-pages.ts says how that is told) goes to PDF through the
 * compiled daemon (its own process, temp data dir and key; two conversions in flight, as many as
 * LibreOffice instances on a 2-core box), and the PDF's page count is compared with the one Word
 * wrote into docProps/app.xml. Identical files count once. Prints a line per file, then
 * "N of M agree (P %)", where a failed conversion counts as not agreeing, with the figure for
 * each first-level subfolder (a corpus kept as one folder per repository), the fonts the PDFs
 * embed, and what was not measured and why.
 *
 * A report, not a gate: it exits 0 unless the daemon cannot start, or `--min-share` is given and
 * the share is below it (then 1). `--fontconfig <file>` gives LibreOffice a fontconfig file read
 * after the system's, to measure with fewer fonts (bench/fonts-before.conf: a Debian box before
 * the metric-compatible, CJK and Noto fonts; see bench/lib/fontconfig-home.ts for how it reaches
 * LibreOffice). `--pdf-dir` keeps every PDF there, named after its file's path.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { convertFile } from './lib/convert-file.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { fontconfigHome } from './lib/fontconfig-home.ts';
import { pdfFacts } from './lib/pdf-facts.ts';
import { fileLine, report, summaryText, type Measured, type Skipped } from './lib/page-count-report.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { wordPages, type WordPages } from './lib/word-pages.ts';

const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const IN_FLIGHT = 2;

interface Candidate {
  path: string;
  data: Buffer;
  word: Extract<WordPages, { kind: 'word' }>;
}

const USAGE = 'usage: node --import tsx bench/page-count.ts <folder> [--json] [--min-share <percent>] [--fontconfig <file>] [--pdf-dir <dir>]';

function options() {
  try {
    const { values, positionals } = parseArgs({
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        'min-share': { type: 'string' },
        fontconfig: { type: 'string' },
        'pdf-dir': { type: 'string' },
      },
    });
    const minShare = values['min-share'] === undefined ? null : Number(values['min-share']);
    if (positionals.length !== 1) throw new Error('page-count: one folder, please');
    if (minShare !== null && !(minShare >= 0 && minShare <= 100)) throw new Error('page-count: --min-share is a percentage, 0 to 100');
    return { folder: positionals[0]!, json: values.json === true, minShare, fontconfig: values.fontconfig, pdfDir: values['pdf-dir'] };
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
    process.exit(2);
  }
}

async function* docxFiles(dir: string): AsyncGenerator<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* docxFiles(path);
    else if (entry.isFile() && entry.name.toLowerCase().endsWith('.docx')) yield path;
  }
}

async function survey(folder: string): Promise<{ candidates: Candidate[]; skipped: Skipped[] }> {
  const candidates: Candidate[] = [];
  const skipped: Skipped[] = [];
  const seen = new Map<string, string>();
  for await (const file of docxFiles(folder)) {
    const path = relative(folder, file).split(sep).join('/');
    const data = await readFile(file);
    const digest = createHash('sha256').update(data).digest('hex');
    const first = seen.get(digest);
    if (first !== undefined) {
      skipped.push({ path, kind: 'duplicate', reason: `same bytes as ${first}` });
      continue;
    }
    seen.set(digest, path);
    const word = await wordPages(data);
    if (word.kind === 'word') candidates.push({ path, data, word });
    else if (word.kind === 'no-page-count') skipped.push({ path, kind: word.kind, reason: `no <Pages> in docProps/app.xml${word.application ? ` (${word.application})` : ''}` });
    else skipped.push({ path, kind: word.kind, reason: word.reason });
  }
  return { candidates, skipped };
}

async function measure(daemon: BenchDaemon, candidate: Candidate, pdfDir: string | undefined): Promise<Measured> {
  const base = { path: candidate.path, wordPages: candidate.word.pages, application: candidate.word.application, words: candidate.word.words };
  const name = candidate.path.split('/').pop()!;
  try {
    const converted = await convertFile(daemon, name, DOCX_TYPE, candidate.data, 'pdf');
    if (!converted.ok) return { ...base, pdfPages: null, agree: false, fonts: [], substituted: [], error: converted.error };
    if (pdfDir) await writeFile(join(pdfDir, `${candidate.path.replaceAll('/', '__')}.pdf`), converted.data);
    const facts = await pdfFacts(converted.data);
    const substituted = converted.warnings.filter((warning) => warning.code === 'font_substituted').map((warning) => `${warning.font} -> ${warning.used}`);
    return { ...base, pdfPages: facts.pages, agree: facts.pages === candidate.word.pages, fonts: facts.fonts, substituted };
  } catch (error) {
    return { ...base, pdfPages: null, agree: false, fonts: [], substituted: [], error: error instanceof Error ? error.message : String(error) };
  }
}

const settings = options();
const { candidates, skipped } = await survey(settings.folder);
const dir = await tempDir('page-count');
const home = settings.fontconfig ? await fontconfigHome(dir, settings.fontconfig) : undefined;
let daemon: BenchDaemon;
try {
  daemon = await startBenchDaemon({ dataDir: join(dir, 'data'), env: home ? { HOME: home, XDG_CONFIG_HOME: undefined } : undefined });
} catch (error) {
  process.stderr.write(`page-count: the daemon did not start: ${error instanceof Error ? error.message : String(error)}\n`);
  await removeDir(dir);
  process.exit(1);
}
if (settings.pdfDir) await mkdir(settings.pdfDir, { recursive: true });
const results: Measured[] = [];
let next = 0;
try {
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < candidates.length) {
      const result = await measure(daemon, candidates[next++]!, settings.pdfDir);
      results.push(result);
      if (!settings.json) process.stdout.write(`${fileLine(result)}\n`);
    }
  }));
} finally {
  await daemon.stop();
  await removeDir(dir);
}
results.sort((a, b) => a.path.localeCompare(b.path));
const summary = report(results, skipped);
if (settings.json) process.stdout.write(`${JSON.stringify({ ...summary, files: results, skippedFiles: skipped }, null, 2)}\n`);
else process.stdout.write(summaryText(results, skipped, summary));
process.exitCode = settings.minShare !== null && summary.share < settings.minShare ? 1 : 0;
