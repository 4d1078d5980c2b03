import { access, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { PDFDocument } from 'pdf-lib';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionWarning } from '../../model/conversion.ts';
import { writeZip, type ArchiveEntry } from '../archive.ts';
import { checkOutputSize } from '../output-cap.ts';
import type { ConversionPair } from '../pairs.ts';
import { firstLine } from '../process/first-line.ts';
import { findProgram } from '../process/path-search.ts';
import { DEFAULT_MAX_INPUT_PIXELS, type Engine, type EngineJob, type EngineOutput, type EngineStatus } from '../types.ts';
import { operationOptions, PASSWORD_OPTION, PDF_OPERATIONS_FORMATS, PDF_VARIANTS } from './formats.ts';
import { asksForMetadata, requestedMarks } from './requests.ts';
import { makePdfa } from './pdfa.ts';
import { finishingArguments, needsOpening, openingArguments, pageCount, qpdfPass } from './qpdf-passes.ts';
import { pagesFromFiles, qpdfModulePath, type MemoryFile, type PageSource } from './qpdf.ts';
import { storedEntries } from '../../inputs/stored-zip.ts';

export interface PdfOperationsOptions {
  /** Memory of one Ghostscript run (PDF/A), MiB (engine_memory_mb); none when unset. */
  processMemoryMb?: number;
  /** Decompression-bomb guard of an image mark's file, as in the image engine. */
  maxInputPixels?: number;
  env?: NodeJS.ProcessEnv;
}

/** Where Debian's Ghostscript (and colord) keep an sRGB profile, the output intent of a PDF/A. */
const SRGB_PROFILES = ['/usr/share/color/icc/ghostscript/srgb.icc', '/usr/share/color/icc/colord/sRGB.icc', '/usr/share/color/icc/sRGB.icc'];

async function findProfile(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const path of [env.CONVD_SRGB_PROFILE, ...SRGB_PROFILES]) {
    if (path && (await access(path).then(() => true, () => false))) return path;
  }
  return undefined;
}

/**
 * PDF -> PDF operations (pages, rotation, flattening, watermark, stamp, page numbers, metadata,
 * PDF/A, encryption, compression) and pdf -> json: qpdf in WebAssembly opens, rearranges and
 * writes the file, pdf-lib draws the marks, Ghostscript makes PDF/A.
 */
export function createPdfOperationsEngine(settings: PdfOperationsOptions = {}): Engine {
  let qpdf = false;
  let pdfa: { gs: string; iccProfile: string } | undefined;
  return {
    name: 'pdfops',
    async probe(): Promise<EngineStatus> {
      const require = createRequire(import.meta.url);
      const pdfLib = require('pdf-lib/package.json') as { version: string };
      try {
        qpdfModulePath();
        qpdf = true;
      } catch {
        qpdf = false;
        return { name: 'pdfops', available: false, detail: 'qpdf-wasm is missing: run npm ci' };
      }
      const qpdfVersion = (require('@neslinesli93/qpdf-wasm/package.json') as { version: string }).version;
      const env = settings.env ?? process.env;
      const gs = await findProgram('gs', 'CONVD_GHOSTSCRIPT_PATH', env);
      const iccProfile = await findProfile(env);
      pdfa = undefined;
      let pdfaNote: string;
      if (!gs) pdfaNote = 'no Ghostscript: pdfa not offered';
      else if (!iccProfile) pdfaNote = 'no sRGB profile (Debian: ghostscript\'s srgb.icc): pdfa not offered';
      else {
        const version = await firstLine(gs, ['--version']).catch(() => undefined);
        if (version === undefined) pdfaNote = 'Ghostscript does not run: pdfa not offered';
        else {
          pdfa = { gs, iccProfile };
          pdfaNote = `PDF/A with Ghostscript ${version}`;
        }
      }
      return { name: 'pdfops', available: true, binary: 'qpdf-wasm', version: qpdfVersion, detail: `pdf-lib ${pdfLib.version}; ${pdfaNote}` };
    },
    pairs(): ConversionPair[] {
      if (!qpdf) return [];
      return [
        { source: 'pdf', target: 'pdf', engine: 'pdfops', kind: 'pdf', options: operationOptions(pdfa !== undefined), variants: PDF_VARIANTS, readsBundles: true },
        { source: 'pdf', target: 'json', engine: 'pdfops', kind: 'pdf', options: [PASSWORD_OPTION], variants: [], describesInput: true },
      ];
    },
    formats: () => PDF_OPERATIONS_FORMATS,
    async convert(job: EngineJob): Promise<EngineOutput> {
      job.signal.throwIfAborted();
      if (job.source !== 'pdf') throw new ConversionFailure('conversion_failed', `The pdfops engine has no source ${job.source}.`);
      // Made when a step first writes a file of its own: a merge in one run never does.
      let made: Promise<string> | undefined;
      const scratch: Scratch = (name) => (made ??= mkdtemp(join(dirname(job.outputPath), 'pdfops-'))).then((directory) => join(directory, name));
      try {
        if (job.target === 'json') return await describe(job, scratch);
        if (job.target === 'pdf') return await operate(job, scratch, pdfa, settings);
        throw new ConversionFailure('conversion_failed', `The pdfops engine has no target ${job.target}.`);
      } finally {
        if (made) await made.then((directory) => rm(directory, { recursive: true, force: true }), () => undefined);
      }
    },
  };
}

/** A path for `name` in the run's own scratch folder (made with the first). */
type Scratch = (name: string) => Promise<string>;

/** pdf-lib, loaded with the first conversion that draws or reads (a merge or a compression never does). */
const loadPdf = async (path: string): Promise<PDFDocument> => (await import('pdf-lib')).PDFDocument.load(await readFile(path), { updateMetadata: false });

/** pdf -> pdf: each step the options ask for, in the fixed order formats.ts documents. */
async function operate(job: EngineJob, scratch: Scratch, pdfa: { gs: string; iccProfile: string } | undefined, settings: PdfOperationsOptions): Promise<EngineOutput> {
  const { options, signal } = job;
  job.onProgress(0);
  const hasPassword = typeof options.password === 'string';
  const marks = requestedMarks(options, job.markImages);
  const level = typeof options.pdfa === 'string' ? (options.pdfa as '1b' | '2b' | '3b') : undefined;
  if (level !== undefined && pdfa === undefined) throw new ConversionFailure('conversion_failed', 'PDF/A needs Ghostscript, which this server does not have.');
  const accessible = options.pdfua === true;
  if (accessible && Math.max(job.inputPaths?.length ?? 0, job.bundledInputs?.length ?? 0) > 1) {
    throw new ConversionFailure('input_invalid', 'PDF/UA keeps a PDF\'s own tags, and files merged into one lose theirs: make each file a PDF/UA on its own.');
  }
  const drawing = marks.length > 0 || asksForMetadata(options) || accessible;
  const finishing = finishingArguments(job.variant, options);
  // Nothing between the first qpdf run and the last (no drawing, no PDF/A, no split): one run
  // does both. Each run costs qpdf's start, about 50 ms, beside 100 ms for 50 pages.
  const oneRun = !drawing && level === undefined && !asksForSplit(options);
  const bundled = job.bundledInputs ? await bundledPdfs(job.inputPath, job.bundledInputs) : undefined;
  const sources: PageSource[] | undefined = bundled ?? job.inputPaths;
  let current = job.inputPaths?.[0] ?? job.inputPath;
  if (bundled?.length === 1) {
    // One PDF with images to draw: the steps below take it from a file.
    current = await scratch('input.pdf');
    await writeFile(current, bundled[0]!.data);
  }
  if (sources && sources.length > 1) {
    const [primary, ...others] = sources as [PageSource, ...PageSource[]];
    // A merge: the files' pages in order, the first file's document information kept. The first
    // file is qpdf's primary input, opened with the top-level password; the others with theirs.
    const password = hasPassword ? String(options.password) : undefined;
    const merging = ['--decrypt', ...(password === undefined ? [] : [`--password=${password}`]), ...pagesFromFiles(sources, password)];
    const memory = others.filter((source): source is MemoryFile => typeof source !== 'string');
    if (oneRun && !needsOpening(options)) {
      job.onProgress(50);
      await qpdfPass(withFinishing(merging, finishing), primary, job.outputPath, signal, hasPassword, memory);
      return finished(job, false, []);
    }
    const merged = await scratch('merged.pdf');
    await qpdfPass(merging, primary, merged, signal, hasPassword, memory);
    current = merged;
  }
  if (needsOpening(options) && oneRun) {
    job.onProgress(50);
    await qpdfPass(withFinishing(openingArguments(options), finishing), current, job.outputPath, signal, hasPassword);
    return finished(job, false, []);
  }
  if (needsOpening(options) || drawing || level !== undefined) {
    const opened = await scratch('opened.pdf');
    await qpdfPass(openingArguments(options), current, opened, signal, hasPassword);
    current = opened;
  }
  job.onProgress(20);
  let warnings: ConversionWarning[] = [];
  if (drawing || level !== undefined) {
    const [doc, { drawMarks }, { applyMetadata, readInfo }, { makePdfUa }] = await Promise.all([loadPdf(current), import('./marks.ts'), import('./document-info.ts'), import('./pdfua.ts')]);
    await drawMarks(doc, marks, { maxInputPixels: settings.maxInputPixels ?? DEFAULT_MAX_INPUT_PIXELS }, signal, (done, total) => job.onProgress(20 + Math.floor((50 * done) / total)));
    applyMetadata(doc, options);
    if (accessible) makePdfUa(doc);
    if (drawing) {
      const marked = await scratch('marked.pdf');
      await writeFile(marked, await doc.save({ useObjectStreams: false, updateFieldAppearances: false }));
      current = marked;
    }
    if (level !== undefined && pdfa !== undefined) {
      job.onProgress(75);
      const archival = await scratch('pdfa.pdf');
      warnings = await makePdfa({
        ...pdfa, level, info: readInfo(doc), inputPath: current, outputPath: archival, signal, timeLimitMs: job.timeLimitMs, memoryLimitMb: settings.processMemoryMb,
      });
      current = archival;
    }
  }
  job.onProgress(90);
  const parts = await splitParts(job, scratch, current, finishing, hasPassword);
  let archive = false;
  if (parts === undefined) await qpdfPass(finishing, current, job.outputPath, signal, hasPassword);
  else if (parts.length === 1) await rename(parts[0]!.path, job.outputPath);
  else {
    await writeZip(parts, job.outputPath, signal, job.maxOutputBytes);
    archive = true;
  }
  return finished(job, archive, warnings);
}

/**
 * A merge's PDFs read from their stored bundle, each handed to qpdf in memory: none is written to
 * a file of its own (the first is qpdf's primary input, whose document information the merge keeps).
 */
async function bundledPdfs(bundle: string, names: readonly string[]): Promise<MemoryFile[]> {
  const entries = await storedEntries(await readFile(bundle), names);
  return names.map((name) => ({ name, data: entries.get(name)! }));
}

/** A first run's arguments with the last run's: decrypted as it opens, unless the result is encrypted again. */
function withFinishing(opening: string[], finishing: string[]): string[] {
  return [...(finishing.includes('--encrypt') ? opening.filter((arg) => arg !== '--decrypt') : opening), ...finishing];
}

const asksForSplit = (options: EngineJob['options']): boolean => typeof options.split_every === 'number' || typeof options.split_ranges === 'string';

/** The result as written: measured, within the cap. */
async function finished(job: EngineJob, archive: boolean, warnings: ConversionWarning[]): Promise<EngineOutput> {
  const size = await stat(job.outputPath).then((info) => info.size, () => 0);
  if (size === 0) throw new ConversionFailure('conversion_failed', 'qpdf wrote no output.');
  checkOutputSize(size, job.maxOutputBytes);
  job.onProgress(100);
  return { size, ...(archive ? { archive } : {}), ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * The parts of a split, each written by the last qpdf pass with the pages of its range (so each
 * keeps the document information, and is encrypted, compressed or linearized as the whole would
 * be: qpdf's own --split-pages drops the Info dictionary), in order; undefined when no split was
 * asked for.
 */
async function splitParts(job: EngineJob, scratch: Scratch, current: string, finishing: string[], hasPassword: boolean): Promise<ArchiveEntry[] | undefined> {
  const { split_every: every, split_ranges: listed } = job.options;
  if (typeof every !== 'number' && typeof listed !== 'string') return undefined;
  const directory = await scratch('parts');
  await mkdir(directory);
  let ranges: string[];
  if (typeof every === 'number') {
    // The file here opens without a password when one was given (the first pass decrypted it).
    const count = await pageCount(current, job.signal);
    const width = String(count).length;
    ranges = Array.from({ length: Math.ceil(count / every) }, (_, index) => {
      const [from, to] = [index * every + 1, Math.min(count, (index + 1) * every)];
      return from === to ? String(from).padStart(width, '0') : `${String(from).padStart(width, '0')}-${String(to).padStart(width, '0')}`;
    });
  } else ranges = (listed as string).split(',');
  const entries: ArchiveEntry[] = [];
  let written = 0;
  for (const [index, range] of ranges.entries()) {
    job.signal.throwIfAborted();
    // Zero-padded for the names (pages-01-05.pdf sorts before pages-06-10.pdf); qpdf reads the numbers.
    const name = `pages-${range}.pdf`;
    const path = join(directory, `${index}-${name}`);
    const pages = range.replace(/\b0+(\d)/g, '$1');
    await qpdfPass([...finishing, '--pages', '.', pages, '--'], current, path, job.signal, hasPassword);
    // The parts together are the zip: past the cap the split stops, before the next part is written.
    written += (await stat(path)).size;
    checkOutputSize(written, job.maxOutputBytes);
    entries.push({ path, name: entries.some((entry) => entry.name === name) ? `${index + 1}-${name}` : name });
    job.onProgress(90 + Math.floor((9 * (index + 1)) / ranges.length));
  }
  return entries;
}
/** pdf -> json: pages, their sizes, the document information, encryption, tags, fields, PDF/A. */
async function describe(job: EngineJob, scratch: Scratch): Promise<EngineOutput> {
  job.onProgress(0);
  let doc: PDFDocument;
  try {
    doc = await (await import('pdf-lib')).PDFDocument.load(await readFile(job.inputPath), { updateMetadata: false, ignoreEncryption: true });
  } catch (error) {
    throw new ConversionFailure('input_invalid', `The input is not a readable PDF: ${error instanceof Error ? error.message : String(error)}`);
  }
  const encrypted = doc.isEncrypted;
  if (encrypted) {
    // Its strings (the title, ...) are encrypted too: read them from a decrypted copy.
    const opened = await scratch('opened.pdf');
    await qpdfPass(openingArguments({ ...(typeof job.options.password === 'string' ? { password: job.options.password } : {}) }), job.inputPath, opened, job.signal, typeof job.options.password === 'string');
    doc = await loadPdf(opened);
  }
  const facts = await (await import('./inspect.ts')).inspectPdf(doc, job.inputPath, encrypted);
  const body = `${JSON.stringify(facts, null, 2)}\n`;
  checkOutputSize(Buffer.byteLength(body), job.maxOutputBytes);
  await writeFile(job.outputPath, body);
  job.onProgress(100);
  return { size: Buffer.byteLength(body) };
}
