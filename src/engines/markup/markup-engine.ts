import { mkdir, mkdtemp, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { textEncodingOf } from '../data/utf8.ts';
import type { ConversionPair } from '../pairs.ts';
import { checkOutputSize, watchOutputCap } from '../output-cap.ts';
import { ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess, type RunResult } from '../subprocess.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import {
  MARKUP_FORMATS, MARKUP_SOURCES, MARKUP_TARGETS, NUMBERED_BY_FILTER, PACKAGED_TARGETS, PAIRS_LEFT_TO_OTHERS, READERS, RTF_SOURCES,
  WRAP_ARGUMENTS, WRITERS, markupOptions, type MarkupSource, type MarkupTarget,
} from './formats.ts';
import { HTML_TEMPLATE, inertFilter, MARKDOWN_FILTER, NUMBER_FILTER, RAW_HTML_FILTER, RST_FILTER, TEXT_FILTER } from './job-files.ts';
import { leftOutOf, readLogHead } from './left-out.ts';
import {
  findPandoc, INSTALL_HINT, MIN_VERSION, missingDataFile, pandocApiVersion, pandocVersion, readDataFiles, versionAtLeast, WRITER_DATA_FILES,
} from './pandoc.ts';
import { scanMarkdown } from './nesting.ts';
import { docxWithTextBoxesInline } from './text-boxes.ts';
import { mayHoldHtml, writeTextAsPandocJson, writeWindows1252AsUtf8 } from './text-source.ts';

export interface MarkupEngineOptions {
  /** Where CONVD_PANDOC_PATH and PATH are read; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /**
   * Wall-clock limit of one pandoc run; past it the process group is killed and the job fails with
   * ConversionFailure('timeout'). The runner's own limit (through the AbortSignal) applies as well.
   */
  timeLimitMs?: number;
  /** pandoc's heap (`+RTS -M`), in MiB; past it pandoc stops and the job fails with memory_limit. Default 512. */
  memoryLimitMb?: number;
  /** Engine.maxConcurrentRuns; default the cores (one pandoc run keeps about one core busy). */
  maxConcurrentRuns?: number;
}

interface Toolchain {
  pandoc: string;
  version: string;
  /** The version of its document types as JSON (pandoc.ts pandocApiVersion): how text is handed to it. */
  apiVersion: number[];
  /** pandoc's own data files the docx, odt and epub writers read, by name (pandoc.ts). */
  dataFiles: Map<string, Buffer>;
  /** Targets this pandoc was seen to write in the sandbox. */
  targets: Set<MarkupTarget>;
}

export const DEFAULT_MEMORY_LIMIT_MB = 512;

/** Names inside a job's working directory; pandoc gets only these on its command line. */
const FILTER_FILE = 'inert.lua';
const RAW_HTML_FILTER_FILE = 'raw-html.lua';
const NUMBER_FILTER_FILE = 'number.lua';
const MARKDOWN_FILTER_FILE = 'markdown.lua';
const TEXT_FILTER_FILE = 'text.lua';
const RST_FILTER_FILE = 'rst.lua';
const TEMPLATE_FILE = 'template.html';
/**
 * pandoc's sandbox serves a file it was given on the command line (a directory: every file in
 * it) under the name it was given. Its writers look for their data files as `data/data/NAME`
 * (the sandbox's `getDataFileName`), relative to the working directory: so the files are written
 * to `data/data/NAME` there and `data` is named by an option whose files no writer of ours
 * uses: --epub-embed-font (only the epub writer reads fonts, by glob, and `data` matches none).
 */
const DATA_ROOT = 'data';
const DATA_DIR = join(DATA_ROOT, 'data');
/** Named by the engine on pandoc's command line: never what a document left out (left-out.ts). */
const OWN_PATHS: ReadonlySet<string> = new Set([DATA_ROOT]);
/** pandoc's log in the working directory (`--log`). */
const LOG_FILE = 'pandoc-log.json';

/**
 * pandoc's exit codes (Text.Pandoc.Error) for documents it cannot read: XML errors, a broken docx,
 * odt or epub (63), parse errors, macro loops, text that is not UTF-8, a resource the document
 * names and the sandbox does not have.
 */
const INPUT_EXIT_CODES = new Set([44, 63, 64, 65, 91, 92, 93, 94, 99]);
/** GHC's runtime exits with 251 when the heap limit (+RTS -M) is reached. */
const HEAP_EXHAUSTED_EXIT = 251;
const OUT_OF_MEMORY = /Heap exhausted|Stack space overflow|out of memory/i;
/** How often a running conversion's output is measured against EngineJob.maxOutputBytes. */
const OUTPUT_POLL_MS = 200;
const MAX_MESSAGE_CHARS = 600;
/** Sources that are text pandoc reads itself (UTF-8 only): one that is not is handed over as UTF-8. */
const TEXT_SOURCES: ReadonlySet<MarkupSource> = new Set(['md', 'rst', 'org', 'latex']);
/** pandoc's words for a file its sandbox did not give it that the document cannot do without. */
const NEEDS_FILE = /File (.+) not found in resource path/;

/**
 * Sources whose reader may keep raw HTML (Markdown's, rst's `raw:: html`, org's export blocks):
 * RAW_HTML_FILTER runs for them when the text has something like a tag; for an EPUB always
 * (its reader keeps what it does not know raw, and it is a zip). Plain text is written as pandoc's
 * own document (JSON) by the engine itself: nothing in it is raw.
 */
const RAW_HTML_SOURCES: ReadonlySet<MarkupSource> = new Set(['md', 'rst', 'org']);

const SOURCE_NAMES: Record<MarkupSource, string> = {
  md: 'Markdown file', html: 'HTML file', docx: 'Word document', odt: 'OpenDocument text', epub: 'EPUB book',
  rst: 'reStructuredText file', org: 'Org file', latex: 'LaTeX file', txt: 'text file',
};

/** Documents between markup formats with pandoc, always in its sandbox (see README, "Documents"). */
export function createMarkupEngine(settings: MarkupEngineOptions = {}): Engine {
  let tools: Toolchain | undefined;
  const memoryLimitMb = settings.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB;

  return {
    name: 'markup',
    maxConcurrentRuns: settings.maxConcurrentRuns ?? availableParallelism(),
    async probe(): Promise<EngineStatus> {
      tools = undefined;
      const found = await findPandoc(settings.env ?? process.env);
      if (!found) return { name: 'markup', available: false, detail: `pandoc not found (${INSTALL_HINT})` };
      const binary = `${found.path} (${found.origin})`;
      let version: string;
      try {
        version = await pandocVersion(found.path);
      } catch (error) {
        return { name: 'markup', available: false, binary, detail: `pandoc does not run: ${messageOf(error)} (${INSTALL_HINT})` };
      }
      if (!versionAtLeast(version, MIN_VERSION)) {
        return {
          name: 'markup', available: false, binary, version,
          detail: `pandoc ${version} has no --sandbox (2.15 and later have it), and documents must not read files or URLs: install a newer pandoc`,
        };
      }
      let apiVersion: number[];
      try {
        apiVersion = await pandocApiVersion(found.path);
      } catch (error) {
        return { name: 'markup', available: false, binary, version, detail: `pandoc does not write its JSON: ${messageOf(error)}` };
      }
      const checked = await checkTargets(found.path, version, apiVersion, memoryLimitMb);
      const missing = MARKUP_TARGETS.filter((target) => !checked.tools.targets.has(target));
      const notes = [
        `sandboxed, heap limit ${memoryLimitMb} MB`,
        missing.length === 0 ? 'all targets' : `targets not offered: ${missing.map((target) => `${target} (${checked.problems.get(target) ?? '?'})`).join('; ')}`,
      ];
      if (checked.tools.targets.size === 0) return { name: 'markup', available: false, binary, version, detail: notes.join('; ') };
      tools = checked.tools;
      return { name: 'markup', available: true, binary, version, detail: notes.join('; ') };
    },
    pairs: () => (tools ? markupPairs(tools.targets) : []),
    formats: () => MARKUP_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!tools) throw new ConversionFailure('internal_error', 'The markup engine was not probed or pandoc is unavailable.');
      return convertMarkup(tools, job, { timeLimitMs: settings.timeLimitMs, memoryLimitMb });
    },
  };
}

function markupPairs(targets: ReadonlySet<MarkupTarget>): ConversionPair[] {
  const pairs: ConversionPair[] = [];
  for (const source of MARKUP_SOURCES) {
    for (const target of MARKUP_TARGETS) {
      if ((source as string) === target || !targets.has(target) || PAIRS_LEFT_TO_OTHERS.has(`${source}->${target}`)) continue;
      if (target === 'rtf' && !RTF_SOURCES.has(source)) continue;
      // A Word document is where chains go on to LibreOffice (md -> docx -> pdf).
      pairs.push({ source, target, engine: 'markup', kind: 'document', options: markupOptions(target), variants: [], ...(target === 'docx' ? { intermediate: true } : {}) });
    }
  }
  return pairs;
}

/**
 * Converts a small document to every target the way a job does (sandbox, heap limit, filter,
 * template), so that only targets this pandoc really writes are offered. A sandboxed writer that
 * misses one of pandoc's data files names it; the file is fetched and the target tried again.
 */
async function checkTargets(pandoc: string, version: string, apiVersion: number[], memoryLimitMb: number): Promise<{ tools: Toolchain; problems: Map<string, string> }> {
  const dataFiles = await readDataFiles(pandoc, WRITER_DATA_FILES);
  const tools: Toolchain = { pandoc, version, apiVersion, dataFiles, targets: new Set(MARKUP_TARGETS) };
  const problems = new Map<string, string>();
  const dir = await mkdtemp(join(tmpdir(), 'convd-markup-probe-'));
  try {
    const input = join(dir, 'probe.md');
    // Raw HTML too: the raw HTML filter must run on this pandoc, or the target is not offered.
    await writeFile(input, '# Probe\n\nA paragraph of *text*, <b>bold</b><br>and more.\n\n<div>\n<p>A div.</p>\n</div>\n');
    await Promise.all(MARKUP_TARGETS.map(async (target) => {
      for (let attempt = 0; attempt <= WRITER_DATA_FILES.length; attempt++) {
        const job: EngineJob = {
          inputPath: input, outputPath: join(dir, `probe-${target}.${target}`), source: 'md', target, variant: null,
          options: {}, signal: new AbortController().signal, onProgress: () => undefined,
        };
        try {
          await convertMarkup(tools, job, { timeLimitMs: 30_000, memoryLimitMb });
          return;
        } catch (error) {
          const name = missingDataFile(messageOf(error));
          if (name && !dataFiles.has(name)) {
            const more = await readDataFiles(pandoc, [name]);
            if (more.has(name)) {
              dataFiles.set(name, more.get(name)!);
              continue;
            }
          }
          problems.set(target, messageOf(error));
          tools.targets.delete(target);
          return;
        }
      }
      problems.set(target, 'pandoc kept asking for more of its data files');
      tools.targets.delete(target);
    }));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { tools, problems };
}

interface RunLimits {
  timeLimitMs: number | undefined;
  memoryLimitMb: number;
}

function isSource(format: string): format is MarkupSource {
  return (MARKUP_SOURCES as readonly string[]).includes(format);
}

function isTarget(format: string): format is MarkupTarget {
  return (MARKUP_TARGETS as readonly string[]).includes(format);
}

/**
 * One conversion in a working directory of its own, beside the output (so in the data dir's
 * scratch space, cleared after a crash), removed afterwards: the input linked in as
 * `document.<source>`, the filter, the template or the data files, and pandoc's output.
 */
async function convertMarkup(tools: Toolchain, job: EngineJob, limits: RunLimits): Promise<EngineOutput> {
  const { source, target } = job;
  if (!isSource(source) || !isTarget(target) || !tools.targets.has(target)) {
    throw new ConversionFailure('conversion_failed', `The markup engine cannot convert ${source} to ${target}.`);
  }
  job.onProgress(0);
  job.signal.throwIfAborted();
  const work = await mkdtemp(join(dirname(job.outputPath), `.${basename(job.outputPath)}.pandoc-`));
  try {
    const input = source === 'txt' ? 'document.json' : `document.${source}`;
    if (source === 'txt') {
      // A stream stopped by the signal rejects with an AbortError: the job rejects with the reason.
      await writeTextAsPandocJson(job.inputPath, join(work, input), tools.apiVersion, job.signal).catch((error: unknown) => {
        throw job.signal.aborted ? job.signal.reason : error;
      });
    } else if (TEXT_SOURCES.has(source) && (await textEncodingOf(job.inputPath)) === 'windows-1252') {
      await writeWindows1252AsUtf8(job.inputPath, join(work, input), SOURCE_NAMES[source], job.signal).catch((error: unknown) => {
        throw job.signal.aborted ? job.signal.reason : error;
      });
    } else if (!(source === 'docx' && (await docxWithTextBoxesInline(job.inputPath, join(work, input), job.signal)))) {
      await symlink(resolve(job.inputPath), join(work, input));
    }
    const rawHtml = await mayHoldRawHtml(source, join(work, input), job.signal).catch((error: unknown) => {
      throw job.signal.aborted ? job.signal.reason : error;
    });
    if (source === 'rst') await writeFile(join(work, RST_FILTER_FILE), RST_FILTER);
    if (needsInertFilter(source)) await writeFile(join(work, FILTER_FILE), inertFilter(source !== 'md' || rawHtml));
    if (rawHtml) await writeFile(join(work, RAW_HTML_FILTER_FILE), RAW_HTML_FILTER);
    if (target === 'html') await writeFile(join(work, TEMPLATE_FILE), HTML_TEMPLATE);
    if (numberedByFilter(target, job)) await writeFile(join(work, NUMBER_FILTER_FILE), NUMBER_FILTER);
    if (target === 'md') await writeFile(join(work, MARKDOWN_FILTER_FILE), MARKDOWN_FILTER);
    if (target === 'txt') await writeFile(join(work, TEXT_FILTER_FILE), TEXT_FILTER);
    if (PACKAGED_TARGETS.has(target)) await writeDataFiles(work, tools.dataFiles);
    const output = `output.${target}`;
    await runPandoc(tools, job, work, pandocArguments(source, target, job, input, output, limits.memoryLimitMb, rawHtml), limits);
    const outputPath = join(work, output);
    const size = await stat(outputPath).then((info) => info.size, () => null);
    if (size === null) throw new ConversionFailure('conversion_failed', 'pandoc ended without writing its output.');
    checkOutputSize(size, job.maxOutputBytes);
    await rename(outputPath, job.outputPath);
    const warnings = leftOutOf(await readLogHead(join(work, LOG_FILE)), OWN_PATHS);
    job.onProgress(100);
    return warnings.length > 0 ? { size, warnings } : { size };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The whole command line: fixed names in the working directory and fixed words; of the job, only
 * validated options, each mapped to an argument of our own.
 */
function pandocArguments(source: MarkupSource, target: MarkupTarget, job: EngineJob, input: string, output: string, memoryLimitMb: number, rawHtml: boolean): string[] {
  const args = [
    // GHC's runtime options: the heap limit. (GHCRTS from the environment is not passed on.)
    '+RTS', `-M${memoryLimitMb}m`, '-RTS',
    '--sandbox', '--quiet', '--standalone',
    // Its warnings as JSON whatever --quiet says: what the sandbox left out is told (left-out.ts).
    `--log=${LOG_FILE}`,
    `--from=${READERS[source]}`, `--to=${WRITERS[target]}`,
    // Filters run in this order: rst read as docutils reads it, raw HTML read as HTML, then
    // everything made inert, then the headings numbered or, for Markdown and plain text, what
    // they cannot say taken out.
    ...(source === 'rst' ? [`--lua-filter=${RST_FILTER_FILE}`] : []),
    ...(rawHtml ? [`--lua-filter=${RAW_HTML_FILTER_FILE}`] : []),
    ...(needsInertFilter(source) ? [`--lua-filter=${FILTER_FILE}`] : []),
    ...(numberedByFilter(target, job) ? [`--lua-filter=${NUMBER_FILTER_FILE}`] : []),
    ...(target === 'md' ? [`--lua-filter=${MARKDOWN_FILTER_FILE}`] : []),
    ...(target === 'txt' ? [`--lua-filter=${TEXT_FILTER_FILE}`] : []),
    `--output=${output}`,
  ];
  if (target === 'html') args.push(`--template=${TEMPLATE_FILE}`);
  if (PACKAGED_TARGETS.has(target)) args.push(`--epub-embed-font=${DATA_ROOT}`);
  if (job.options.toc === true) args.push('--toc');
  if (job.options.number_sections === true && !NUMBERED_BY_FILTER.has(target)) args.push('--number-sections');
  const wrap = typeof job.options.wrap === 'string' ? WRAP_ARGUMENTS[job.options.wrap] : undefined;
  if (wrap) args.push(wrap);
  args.push(input);
  return args;
}

/**
 * Plain text reaches pandoc as the document the engine wrote itself (text-source.ts): words,
 * spaces, line breaks and paragraphs, no link, attribute, raw block or metadata for the inert filter
 * to take out, and the filter's pass over a large text cost a quarter of its conversion.
 */
function needsInertFilter(source: MarkupSource): boolean {
  return source !== 'txt';
}

/**
 * Whether the raw HTML filter runs: always for an EPUB; for Markdown, rst and Org where the text
 * has something like a tag. Markdown's pass refuses a list nested too deep for pandoc as well.
 */
async function mayHoldRawHtml(source: MarkupSource, inputPath: string, signal: AbortSignal): Promise<boolean> {
  if (source === 'epub') return true;
  if (source === 'md') return (await scanMarkdown(inputPath, signal)).mayHoldHtml;
  return RAW_HTML_SOURCES.has(source) && mayHoldHtml(inputPath, signal);
}

function numberedByFilter(target: MarkupTarget, job: EngineJob): boolean {
  return job.options.number_sections === true && NUMBERED_BY_FILTER.has(target);
}

async function writeDataFiles(work: string, files: ReadonlyMap<string, Buffer>): Promise<void> {
  const dirs = new Set([...files.keys()].map((name) => dirname(join(work, DATA_DIR, name))));
  for (const dir of [...dirs].sort()) await mkdir(dir, { recursive: true });
  await Promise.all([...files].map(([name, bytes]) => writeFile(join(work, DATA_DIR, name), bytes)));
}

/**
 * Runs pandoc in the job's directory, with an environment of its own (no user data directory,
 * no GHCRTS, UTF-8), killed with its process group on abort, time limit or an output past the
 * job's cap; its failures become ConversionFailures.
 */
async function runPandoc(tools: Toolchain, job: EngineJob, work: string, args: string[], limits: RunLimits): Promise<void> {
  const outputPath = join(work, args.find((arg) => arg.startsWith('--output='))!.slice('--output='.length));
  // pandoc writes its result at the end, in one go: a result past the cap is stopped while it is
  // written (its heap limit bounds how large it can get), and measured again afterwards.
  const { signal, stop } = watchOutputCap(outputPath, job.maxOutputBytes, job.signal, OUTPUT_POLL_MS);
  let result: RunResult;
  try {
    result = await runProcess(tools.pandoc, args, {
      cwd: work,
      env: pandocEnvironment(work),
      signal,
      timeoutMs: limits.timeLimitMs,
      dieWithParent: true,
      niceness: ENGINE_NICENESS,
    });
  } finally {
    stop();
  }
  if (result.code === 0) return;
  const message = readable(result.stderrTail, work, job);
  if (result.code === HEAP_EXHAUSTED_EXIT || OUT_OF_MEMORY.test(result.stderrTail)) {
    throw new ConversionFailure('memory_limit', `The conversion needed more memory than its limit of ${limits.memoryLimitMb} MB.`);
  }
  if (result.code !== null && INPUT_EXIT_CODES.has(result.code)) {
    const what = SOURCE_NAMES[job.source as MarkupSource] ?? 'document';
    // Where pandoc cannot go on without the file (rst's csv-table :file:), unlike an include.
    const needed = NEEDS_FILE.exec(message)?.[1];
    if (needed) throw new ConversionFailure('input_invalid', `The ${what} takes part of its content from the file "${needed}", which is not read here: only the file sent is converted. Put that part in the document itself.`);
    throw new ConversionFailure('input_invalid', `The ${what} could not be read: ${message || 'pandoc gave no reason'}`);
  }
  throw new ConversionFailure('conversion_failed', `pandoc failed (${result.code === null ? `killed by ${result.signal}` : `exit ${result.code}`})${message ? `: ${message}` : '.'}`);
}

function pandocEnvironment(work: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    // pandoc's user data directory (templates, reference documents) would be $XDG_DATA_HOME/pandoc
    // or ~/.pandoc: neither exists here, so every job gets pandoc's defaults.
    HOME: work,
    XDG_DATA_HOME: join(work, '.local', 'share'),
    TMPDIR: work,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
  };
  // Where a relocated pandoc finds its data files (Cabal's Paths module): the install's, not a user's.
  if (process.env.pandoc_datadir) env.pandoc_datadir = process.env.pandoc_datadir;
  return env;
}

/** pandoc's message for people: its last lines, without the paths of this machine, not too long. */
function readable(stderr: string, work: string, job: EngineJob): string {
  const text = [[`${work}/`, ''], [work, '.'], [job.inputPath, 'input'], [job.outputPath, 'output']]
    .reduce((acc, [path, name]) => acc.split(path!).join(name), stderr)
    .replace(/^pandoc: /gm, '');
  const lines = lastLines(text, 4);
  return lines.length > MAX_MESSAGE_CHARS ? `${lines.slice(0, MAX_MESSAGE_CHARS)}…` : lines;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
