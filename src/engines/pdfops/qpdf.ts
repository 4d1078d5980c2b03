import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';
import { Worker } from 'node:worker_threads';

export interface QpdfResult {
  /** qpdf's exit status: 0 success, 2 errors, 3 warnings only. */
  code: number;
  /** What qpdf printed (at most the last 50 lines), with the scratch paths replaced by "input"/"output". */
  messages: string[];
}

/**
 * The worker's code, plain CommonJS so it runs the same from the TypeScript sources and from
 * dist/. qpdf (WebAssembly) prints through console.log/console.error, which the Emscripten glue
 * binds when the module is created: they are redirected first so the messages can be returned.
 * Input and output directories are mounted with NODEFS, so no copy of the PDF is held in memory;
 * files given in memory (a merge's small PDFs read from their bundle) are written to /mem.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const messages = [];
const collect = (...parts) => messages.push(parts.join(' '));
console.log = collect; console.error = collect; console.warn = collect; console.info = collect;
require(workerData.modulePath)({}).then((qpdf) => {
  if (workerData.inputDir !== null) { qpdf.FS.mkdir('/in'); qpdf.FS.mount(qpdf.NODEFS, { root: workerData.inputDir }, '/in'); }
  if (workerData.outputDir !== null) { qpdf.FS.mkdir('/out'); qpdf.FS.mount(qpdf.NODEFS, { root: workerData.outputDir }, '/out'); }
  qpdf.FS.mkdir('/mem');
  for (const file of workerData.memory) qpdf.FS.writeFile('/mem/' + file.name, file.data);
  let code;
  try {
    code = qpdf.callMain(workerData.args);
  } catch (error) {
    code = error && typeof error.status === 'number' ? error.status : 2;
    if (!(error && typeof error.status === 'number')) messages.push(String(error && error.message || error));
  }
  parentPort.postMessage({ code, messages: messages.slice(-50) });
}, (error) => parentPort.postMessage({ code: -1, messages: ['qpdf did not start: ' + (error && error.message || error)] }));
`;

let modulePath: string | undefined;

/** Path of the qpdf WebAssembly glue, or an exception when the package is missing. */
export function qpdfModulePath(): string {
  modulePath ??= createRequire(import.meta.url).resolve('@neslinesli93/qpdf-wasm');
  return modulePath;
}

/** A file handed to qpdf in memory, as /mem/<name>. */
export interface MemoryFile {
  name: string;
  data: Uint8Array;
}

/** A file handed to qpdf in memory, or one on disk: where qpdf's worker sees it. */
function workerPath(source: PageSource, mount: '/in' | '/out'): string {
  return typeof source === 'string' ? `${mount}/${basename(source)}` : `/mem/${source.name}`;
}

/**
 * Runs `qpdf [options] input output` in a worker thread (qpdf's main is synchronous and would
 * block the event loop); `qpdf [options] input` when `outputPath` is null (a question such as
 * --show-npages, answered in the messages). The input is a file, or one handed over in memory
 * (then nothing of its directory is mounted). `memory`: files the options take pages from as
 * /mem/<name> (pagesFromFiles). Abort terminates the worker at once and rejects with the
 * signal's reason.
 */
export function runQpdf(options: string[], input: PageSource, outputPath: string | null, signal: AbortSignal, memory: readonly MemoryFile[] = []): Promise<QpdfResult> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const inputName = workerPath(input, '/in');
  const outputName = outputPath === null ? null : workerPath(outputPath, '/out');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      modulePath: qpdfModulePath(),
      inputDir: typeof input === 'string' ? dirname(input) : null,
      outputDir: outputPath === null ? null : dirname(outputPath),
      memory: typeof input === 'string' ? memory : [input, ...memory],
      args: [...options, inputName, ...(outputName === null ? [] : [outputName])],
    },
  });
  return new Promise<QpdfResult>((resolve, reject) => {
    let settled = false;
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      action();
    };
    // terminate() interrupts WebAssembly too; the promise settles on 'exit', once the thread is gone.
    const onAbort = (): void => void worker.terminate();
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (message: { code: number; messages: string[] }) => {
      const clean = message.messages.map((line) => {
        const named = line.split(inputName).join('input');
        return (outputName === null ? named : named.split(outputName).join('output')).replace(/^\[worker eval\]:\s*/, '');
      });
      // The result is in: settle before terminate(), whose 'exit' would otherwise look like a crash.
      finish(() => resolve({ code: message.code, messages: clean }));
      void worker.terminate();
    });
    worker.once('error', (error) => finish(() => reject(error)));
    worker.once('exit', (code) => finish(() => reject(signal.aborted ? signal.reason : new Error(`qpdf worker exited (${code}) without a result`))));
  });
}

/** Where qpdf takes pages from: a file on disk, or one handed to it in memory. */
export type PageSource = string | MemoryFile;

/**
 * The arguments that take pages from several files, for a run whose input is the first of them:
 * inside qpdf's worker the input's directory is /in, so every file on disk must be in that
 * directory (and the input on disk); files in memory are /mem/<name>.
 */
export function pagesFromFiles(sources: readonly PageSource[], password?: string): string[] {
  const onDisk = sources.filter((source): source is string => typeof source === 'string');
  if (onDisk.length > 0 && typeof sources[0] !== 'string') throw new Error('files on disk are taken pages from only beside an input on disk');
  if (onDisk.some((path) => dirname(path) !== dirname(onDisk[0]!))) throw new Error('the files to take pages from must share a directory');
  return pagesFrom(sources.map((source) => workerPath(source, '/in')), password);
}

/** `--pages` with every page of each of these files (as qpdf's worker sees them). */
function pagesFrom(files: readonly string[], password?: string): string[] {
  // Every page of each: the range is given, or qpdf would read the next file's name as one.
  return ['--pages', ...files.flatMap((file) => [file, ...(password === undefined ? [] : [`--password=${password}`]), '1-z']), '--'];
}
