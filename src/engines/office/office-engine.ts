import { mkdir, mkdtemp, readdir, rm, stat, unlink } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { availableParallelism, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../pairs.ts';
import type { ConversionWarning } from '../../model/conversion.ts';
import { checkOutputSize } from '../output-cap.ts';
import { ENGINE_NICENESS, engineEnvironment, findParentDeathWrapper } from '../process/group.ts';
import { HelperPool, type HelperLifecycle } from '../process/helper-pool.ts';
import { HelperDied, HelperTaskError } from '../process/helper-process.ts';
import { KeptDirs } from '../process/kept-dirs.ts';
import { linkOrCopy, moveFile } from '../process/link-or-copy.ts';
import { removeOrphanedDirs } from '../process/orphaned-dirs.ts';
import { lastLines } from '../subprocess.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from '../types.ts';
import {
  DRAWING_SOURCES, DRAWING_TARGETS, FLAT_FORMATS, INPUT_FILTERS, kindOfSource, OFFICE_FORMATS, OFFICE_SOURCES, OUTPUT_FILTERS, SHEET_HTML_SOURCES, SHEET_SOURCES, SHEET_TARGETS, SLIDE_SOURCES, SLIDE_TARGETS,
  TEXT_SOURCES, TEXT_TARGETS, PDF_VARIANTS, documentOptions, pdfOptions, type InputFilter, type OfficeDocumentKind, type OfficeFamily,
} from './formats.ts';
import { findOffice, type OfficeInstall } from './find-office.ts';

type ReadyOffice = Extract<OfficeInstall, { ready: true }>;
import { pdfFilterData } from './pdf-options.ts';
import { officeProgress } from './progress.ts';
import { makeProfile, removeOrphanedProfiles, removeProfile } from './profiles.ts';
import { countRetry } from './retries.ts';
import { convertOnce, CRASHED, SecondWayFailed } from './second-way.ts';

export interface OfficeEngineOptions {
  /** LibreOffice instances kept running, each converting one document at a time; default the cores. */
  instances?: number;
  /** Instances beyond `instances`, only for the workers' quick lane (the runner's gate keeps them free for it). */
  quickInstances?: number;
  /** An instance is replaced after this many conversions (LibreOffice's memory grows). */
  recycleAfter?: number;
  /** Resident memory of an instance (its bridge and soffice together), MiB. */
  memoryLimitMb?: number;
  /** Start every instance with the daemon instead of with the first document. */
  warmAtStart?: boolean;
  /**
   * A PDF export that stays on one page this long ends early with `timeout` (office_stall_timeout;
   * progress.ts says why only there); 0 or unset: only the time limit.
   */
  stallMs?: number;
  env?: NodeJS.ProcessEnv;
  onLifecycle?: (event: HelperLifecycle) => void;
  /**
   * Tests only (no configuration reaches it): LibreOffice is made to crash (SIGABRT) for documents
   * whose file name holds `crashOnLoad` as a warm instance opens them, `crashOnStore` as it
   * writes them, and `crashSecondWay` in the second way as well (bridge.py's CONVD_TEST_CRASH_*);
   * one holding `slowBeforeStore` stays open 1.5 s before it is written, as on a busy box.
   */
  faultsForTests?: { crashOnLoad?: string; crashOnStore?: string; crashSecondWay?: string; slowBeforeStore?: string };
}

const DEFAULT_RECYCLE_AFTER = 200;
const DEFAULT_MEMORY_LIMIT_MB = 2048;
const START_TIMEOUT_MS = 60_000;
const IDLE_STOP_MS = 30 * 60_000;
const HEALTH = { request: { op: 'ping' }, everyMs: 60_000, timeoutMs: 10_000 };

/** The directories documents are opened from: `convd-doc-<pid>-XXXXXX` in the temp dir. */
const DOCUMENT_DIR = 'convd-doc-';
const DOCUMENT_DIR_MADE_BY = /^convd-doc-(\d+)-/;

/** The bridge next to this module, in the sources and in dist/ alike (the build copies it). */
const BRIDGE = fileURLToPath(new URL('./bridge.py', import.meta.url));
/** The system's fontconfig without colour fonts, which LibreOffice's PDFs cannot show (fonts.conf says why). */
const FONTCONFIG = fileURLToPath(new URL('./fonts.conf', import.meta.url));

/**
 * pandoc's targets an odt reaches through LibreOffice's docx rather than pandoc's ODT reader:
 * pandoc 2.17 drops whatever a section holds (an agenda's items, an index, multi-column text:
 * 42 of 46 words of LibreOffice's agenda template), its docx reader keeps it.
 */
const ODT_THROUGH_DOCX = ['html', 'md', 'epub', 'rst'] as const;

function officePairs(): ConversionPair[] {
  const pairs: ConversionPair[] = [];
  const add = (sources: readonly string[], targets: readonly string[], family: OfficeFamily) => {
    for (const source of sources) {
      for (const target of targets) {
        if (source === target) continue;
        const pdf = target === 'pdf';
        pairs.push({
          source, target, engine: 'office', kind: 'document',
          options: pdf ? pdfOptions(family) : documentOptions(), variants: pdf ? PDF_VARIANTS : [],
          // Chains go on from a document's PDF (page images, text), from a Word document (to
          // pandoc's formats: doc -> docx -> md) and from a sheet's CSV (JSON...).
          ...(pdf || target === 'docx' || (target === 'csv' && family === 'sheet') ? { intermediate: true } : {}),
          ...(source === 'odt' && target === 'docx' ? { preferredFor: [...ODT_THROUGH_DOCX] } : {}),
        });
      }
    }
  };
  add(TEXT_SOURCES, TEXT_TARGETS, 'text');
  add(SHEET_SOURCES, SHEET_TARGETS, 'sheet');
  add(SHEET_HTML_SOURCES, ['html'], 'sheet');
  add(SLIDE_SOURCES, SLIDE_TARGETS, 'slides');
  add(DRAWING_SOURCES, DRAWING_TARGETS, 'drawing');
  return pairs;
}

/**
 * Office documents (Word, Excel, PowerPoint, their OpenDocument and older kin, their templates,
 * and drawings) with LibreOffice, kept warm: a pool of instances, each a bridge (bridge.py, under
 * the Python that has LibreOffice's `uno`) and its soffice in a process group of their own, one
 * conversion at a time, talked to over UNO. A time limit, a cancel or a PDF export that stalls
 * (progress.ts) kills the instance's group and the next document gets a new one. A document whose
 * opening crashes its instance is tried once more a second way (second-way.ts), counted in
 * retries.ts.
 */
export function createOfficeEngine(settings: OfficeEngineOptions = {}): Engine {
  const instances = settings.instances ?? availableParallelism();
  let office: OfficeInstall | null = null;
  /** One pool, made by the first conversion (or the warm start); later ones wait for the same. */
  let pool: Promise<HelperPool> | null = null;
  const memoryLimitMb = settings.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB;
  const faults = settings.faultsForTests;
  const daemonEnv = settings.env ?? process.env;
  /** What LibreOffice runs with, in an instance and in the second way alike. */
  const officeEnv = engineEnvironment({
    SAL_USE_VCLPLUGIN: 'svp',
    FONTCONFIG_FILE: daemonEnv.FONTCONFIG_FILE ?? FONTCONFIG,
    // More directories the confined bridge and LibreOffice may read (bridge.py `confined`).
    ...(daemonEnv.CONVD_OFFICE_READABLE ? { CONVD_OFFICE_READABLE: daemonEnv.CONVD_OFFICE_READABLE } : {}),
    ...(faults?.crashOnLoad ? { CONVD_TEST_CRASH_ON_LOAD: faults.crashOnLoad } : {}),
    ...(faults?.crashOnStore ? { CONVD_TEST_CRASH_ON_STORE: faults.crashOnStore } : {}),
    ...(faults?.crashSecondWay ? { CONVD_TEST_CRASH_ONE_OFF: faults.crashSecondWay } : {}),
    ...(faults?.slowBeforeStore ? { CONVD_TEST_SLOW_BEFORE_STORE: faults.slowBeforeStore } : {}),
  }, daemonEnv);

  const poolOf = (install: ReadyOffice): Promise<HelperPool> => (pool ??= makePool(install));
  /** Directories documents are opened from, each with its `out`, kept between documents: one per instance, give or take. */
  const documentDirs = new KeptDirs(async () => {
    const dir = await mkdtemp(join(tmpdir(), `${DOCUMENT_DIR}${process.pid}-`));
    await mkdir(join(dir, 'out'), { mode: 0o700 });
    return dir;
  }, instances + (settings.quickInstances ?? 0));

  const makePool = async (install: ReadyOffice): Promise<HelperPool> => {
    const setpriv = await findParentDeathWrapper();
    await removeOrphanedProfiles();
    await removeOrphanedDirs(DOCUMENT_DIR_MADE_BY, (path) => rm(path, { recursive: true, force: true }));
    const made = new HelperPool({
      name: 'office',
      size: instances + (settings.quickInstances ?? 0),
      // Two instances kept warm for the quick lane while any works: a cold start takes seconds, and a
      // regular document may take one of them.
      ...(settings.quickInstances ? { spares: { count: 2, whenBusy: 1 } } : {}),
      recycleAfter: settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER,
      idleStopMs: IDLE_STOP_MS,
      health: HEALTH,
      onLifecycle: settings.onLifecycle,
      helper: async () => {
        // Each instance its own profile, made fresh at its start and removed when it ends.
        const profile = await makeProfile();
        return {
          name: 'office',
          command: {
            command: install.python,
            args: ['-u', BRIDGE, install.sofficeBin, profile, ...(setpriv ? [setpriv] : [])],
            env: officeEnv,
          },
          startTimeoutMs: START_TIMEOUT_MS,
          memoryLimitBytes: memoryLimitMb * 1024 * 1024,
          // The bridge starts soffice.bin: that is where the memory is.
          measureChildren: true,
          niceness: ENGINE_NICENESS,
          // A killed instance leaves its pipe files in /tmp as well.
          cleanup: () => removeProfile(profile),
        };
      },
    });
    if (settings.warmAtStart) void made.warm();
    return made;
  };

  return {
    name: 'office',
    // One document per instance: more at once wait for a free one before their time limit starts.
    maxConcurrentRuns: instances,
    startsClock: true,
    namesItsInputOf: OFFICE_SOURCES,
    async probe(): Promise<EngineStatus> {
      office = await findOffice(settings.env ?? process.env);
      if (!office.ready) return { name: 'office', available: false, binary: office.soffice ?? undefined, detail: office.problem };
      if (settings.warmAtStart) await poolOf(office);
      return {
        name: 'office', available: true, binary: office.soffice, version: office.version,
        detail: `python ${office.python} (uno); ${instances} instance${instances === 1 ? '' : 's'}, ${settings.warmAtStart ? 'started with the daemon' : 'started with the first document'}, replaced after ${settings.recycleAfter ?? DEFAULT_RECYCLE_AFTER} conversions, ${memoryLimitMb} MB each`,
      };
    },
    pairs: () => (office?.ready ? officePairs() : []),
    formats: () => OFFICE_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      if (!office?.ready) throw new ConversionFailure('internal_error', 'The office engine was not probed or LibreOffice is unavailable.');
      job.onProgress(0);
      const running = await poolOf(office);
      const input = INPUT_FILTERS[job.source];
      const output = OUTPUT_FILTERS[job.target];
      if (!input || !output) throw new ConversionFailure('conversion_failed', `The office engine cannot convert ${job.source} to ${job.target}.`);
      const { options: filterOptions, ...filters } = output;
      // A document may print where it is (a FILENAME field with its path, CELL("filename")), so
      // LibreOffice opens it, under the name the engine was given (the user's), from a directory
      // of its own in the system's temp dir (0700), never from the data dir. LibreOffice
      // writes beside its output (lu*.tmp) and cannot clean up when its instance is killed at a
      // time limit: it writes into `out` there. Kept for the next document once emptied (no
      // directory made and removed per document); removed otherwise, and a killed daemon's at the next start.
      const work = await documentDirs.take();
      const name = job.inputName ?? basename(job.inputPath);
      const opened = join(work, name);
      const written = join(work, 'out', `${basename(name, extname(name))}${extname(job.outputPath)}`);
      let warnings: ConversionWarning[] = [];
      let clean = false;
      try {
        await linkOrCopy(job.inputPath, opened);
        try {
          warnings = await convertIn(running, { ...job, inputPath: opened }, written, input, filters, filterOptions);
        } catch (error) {
          if (!(error instanceof CrashedOnDocument)) throw error;
          await secondWay(office, { ...job, inputPath: opened }, join(work, 'second'), written, error.failure);
        }
        await moveFile(written, job.outputPath);
        clean = true;
      } finally {
        // After a failure LibreOffice may still be writing there (its instance is being killed).
        await documentDirs.give(work, clean ? () => emptied(work, opened) : undefined);
      }
      const size = await stat(job.outputPath).then((info) => info.size, () => null);
      // An empty txt is a document's whole text where it has no words (Writer writes zero bytes
      // for a template of styles only); any other empty result is a failure.
      if (size === null || (size === 0 && job.target !== 'txt')) throw new ConversionFailure('conversion_failed', `LibreOffice wrote no ${job.target} file.`);
      checkOutputSize(size, job.maxOutputBytes);
      job.onProgress(100);
      return { size, ...(warnings.length > 0 ? { warnings } : {}) };
    },
    async close() {
      await (await pool)?.close(2000);
      await documentDirs.close();
    },
  };

  /** One document through a LibreOffice instance of the pool, written to `output`; the fonts it had to set in others. */
  async function convertIn(
    running: HelperPool, job: EngineJob, output: string,
    input: InputFilter, filters: Partial<Record<OfficeDocumentKind, string>>, filterOptions: string | undefined,
  ): Promise<ConversionWarning[]> {
    const progress = officeProgress(job.target, settings.stallMs, job.onProgress);
    const request = {
      op: 'convert',
      input: job.inputPath,
      output,
      source: job.source,
      target: job.target,
      inputFilter: input.filter,
      inputFilterOptions: input.options,
      olderFilters: input.older,
      disguises: input.disguises,
      asText: input.text,
      filters,
      filterOptions,
      filterData: job.target === 'pdf' ? pdfFilterData(job.variant, job.options) : undefined,
      landscape: job.options.landscape === true,
      password: typeof job.options.password === 'string' ? job.options.password : undefined,
      exportIndicator: progress.exportIndicator,
      // A chain's later step opens what an earlier engine wrote (pandoc's docx of a Markdown or
      // reStructuredText file): the fonts it names are that engine's, never the user's to hear of.
      fontCheck: job.origin === undefined,
      // A sheet's PDF on its way to text: the page styles' header and footer (the sheet's name,
      // "Page 1") are print decoration, not the cells' text.
      printDecoration: !(job.target === 'pdf' && job.destination === 'txt'),
    };
    try {
      const signal = AbortSignal.any([job.signal, progress.signal]);
      const written = await running.run(request, { signal, onStart: job.startClock, onEvent: progress.onEvent, quick: job.quick === true }) as { warnings?: ConversionWarning[] } | undefined;
      return written?.warnings ?? [];
    } catch (error) {
      if (job.signal.aborted) throw job.signal.reason;
      if (progress.stalled()) throw progress.signal.reason;
      const failure = failureOf(error, memoryLimitMb);
      // Only a crash on the document, opening or writing it (bridge.py tells it by its exit status):
      // not a kill (memory, the OOM killer), a time limit, or a document LibreOffice calls damaged.
      if (error instanceof HelperDied && error.exit.end === 'exited' && error.exit.code === CRASHED) throw new CrashedOnDocument(failure);
      throw failure;
    } finally {
      progress.stop();
    }
  }

  /**
   * A document that crashed a warm instance opening or writing it (some real .doc and .docx files
   * abort LibreOffice 7.4 under loadComponentFromURL that `soffice --convert-to` converts: Word
   * files with comments, on Debian's -nogui packages), once more
   * through a LibreOffice of its own, written to `output`. Where the second way cannot do what
   * the job asks (landscape, a password, a CSV's page without Calc's footer), or fails, the
   * document fails as the crash did, saying so.
   */
  async function secondWay(install: ReadyOffice, job: EngineJob, outDir: string, output: string, crash: Error): Promise<void> {
    const input = INPUT_FILTERS[job.source]!;
    const exportFilters = OUTPUT_FILTERS[job.target]!;
    const kind = kindOfSource(job.source);
    const outputFilter = kind ? exportFilters[kind] : undefined;
    if (!kind || !outputFilter || job.options.landscape === true || typeof job.options.password === 'string' || job.source === 'csv') throw crash;
    await mkdir(outDir);
    try {
      const written = await convertOnce({
        python: install.python, bridge: BRIDGE, sofficeBin: install.sofficeBin, setpriv: await findParentDeathWrapper(),
        input: job.inputPath, outDir, target: job.target,
        inputFilter: input.filter, inputFilterOptions: input.options,
        outputFilter, outputFilterOptions: exportFilters.options, flat: FLAT_FORMATS[kind],
        filterData: job.target === 'pdf' ? pdfFilterData(job.variant, job.options) : undefined,
        signal: job.signal, memoryLimitMb, env: officeEnv,
      });
      await moveFile(written, output);
    } catch (error) {
      countRetry('failed');
      if (job.signal.aborted) throw job.signal.reason;
      // Not the error's own words otherwise: a spawn error names server paths.
      const why = error instanceof SecondWayFailed ? error.reason : 'it could not be run';
      throw new ConversionFailure('conversion_failed', `LibreOffice crashed on the document, and a second try in a LibreOffice of its own (soffice --convert-to) failed too: ${why}.`);
    }
    countRetry('succeeded');
  }
}

/**
 * Whether a document's directory is as it was before the document, once its input is removed:
 * nothing in it but an empty `out` (its output was moved away). Anything else LibreOffice left
 * (a second way's directory, temporary files) and it is not reused.
 */
async function emptied(work: string, opened: string): Promise<boolean> {
  await unlink(opened);
  const [inWork, inOut] = await Promise.all([readdir(work), readdir(join(work, 'out'))]);
  return inWork.length === 1 && inWork[0] === 'out' && inOut.length === 0;
}

/** A warm instance's soffice crashed opening or writing the document: `failure` is how it fails if nothing else works. */
class CrashedOnDocument extends Error {
  constructor(readonly failure: Error) {
    super(failure.message);
    this.name = 'CrashedOnDocument';
  }
}

function failureOf(error: unknown, memoryLimitMb: number): Error {
  if (error instanceof HelperTaskError) {
    const failure = error.error as { kind: string; code?: string; message: string };
    if (failure.kind === 'conversion' && (failure.code === 'input_invalid' || failure.code === 'conversion_failed')) {
      return new ConversionFailure(failure.code, failure.message);
    }
    return new Error(`office bridge: ${failure.message}`);
  }
  if (error instanceof HelperDied) {
    if (error.exit.end === 'memory') {
      return new ConversionFailure('memory_limit', `LibreOffice needed more memory than its limit of ${memoryLimitMb} MB.`);
    }
    // The bridge's own last word where it has one: soffice's crash handler prints its stack (paths) before it.
    const said = error.exit.stderrTail.match(/^soffice (?:crashed|exited) .*$/gm)?.pop() ?? lastLines(error.exit.stderrTail, 2);
    return new ConversionFailure('conversion_failed', `LibreOffice stopped unexpectedly${said ? `: ${said}` : ''}.`);
  }
  return error instanceof Error ? error : new Error(String(error));
}
