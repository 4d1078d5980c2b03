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
 * Input and output directories are mounted with NODEFS, so no copy of the PDF is held in memory.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const messages = [];
const collect = (...parts) => messages.push(parts.join(' '));
console.log = collect; console.error = collect; console.warn = collect; console.info = collect;
require(workerData.modulePath)({}).then((qpdf) => {
  qpdf.FS.mkdir('/in'); qpdf.FS.mount(qpdf.NODEFS, { root: workerData.inputDir }, '/in');
  qpdf.FS.mkdir('/out'); qpdf.FS.mount(qpdf.NODEFS, { root: workerData.outputDir }, '/out');
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

/**
 * Runs `qpdf [options] input output` in a worker thread (qpdf's main is synchronous and would
 * block the event loop); `qpdf [options] input` when `outputPath` is null (a question such as
 * --show-npages, answered in the messages). Abort terminates the worker at once and rejects with
 * the signal's reason.
 */
export function runQpdf(options: string[], inputPath: string, outputPath: string | null, signal: AbortSignal): Promise<QpdfResult> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      modulePath: qpdfModulePath(),
      inputDir: dirname(inputPath),
      outputDir: dirname(outputPath ?? inputPath),
      args: [...options, `/in/${basename(inputPath)}`, ...(outputPath === null ? [] : [`/out/${basename(outputPath)}`])],
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
      const clean = message.messages.map((line) =>
        line.split(`/in/${basename(inputPath)}`).join('input').split(`/out/${basename(outputPath ?? inputPath)}`).join('output').replace(/^\[worker eval\]:\s*/, ''),
      );
      // The result is in: settle before terminate(), whose 'exit' would otherwise look like a crash.
      finish(() => resolve({ code: message.code, messages: clean }));
      void worker.terminate();
    });
    worker.once('error', (error) => finish(() => reject(error)));
    worker.once('exit', (code) => finish(() => reject(signal.aborted ? signal.reason : new Error(`qpdf worker exited (${code}) without a result`))));
  });
}

/**
 * The arguments that take pages from several files, for a run whose input is the first of them:
 * inside qpdf's worker the input's directory is /in, so every file must be in that directory.
 */
export function pagesFromFiles(paths: readonly string[], password?: string): string[] {
  const directory = dirname(paths[0]!);
  if (paths.some((path) => dirname(path) !== directory)) throw new Error('the files to take pages from must share a directory');
  // Every page of each: the range is given, or qpdf would read the next file's name as one.
  return ['--pages', ...paths.flatMap((path) => [`/in/${basename(path)}`, ...(password === undefined ? [] : [`--password=${password}`]), '1-z']), '--'];
}
