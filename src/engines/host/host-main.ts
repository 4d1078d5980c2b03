/**
 * The engine host: a child process of convd (or of `conv` in-process) that runs the engines
 * written in JavaScript or WebAssembly (data formats, Markdown, pdf-lib, PDFium), so that their
 * work never runs on the daemon's event loop. Its parent kills it (and with it the work) at a time
 * limit, a cancel or a memory limit; V8's heap limit (--max-old-space-size) ends it on a heap
 * blow-up. Requests are JSON lines on stdin, one at a time; answers are JSON lines on file
 * descriptor 3 (HelperProcess).
 */
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { ConversionFailure, HandOver } from '../../errors/api-error.ts';
import { engineLoaders } from '../catalog.ts';
import type { Engine, EngineSettings } from '../types.ts';
import type { HelperMessage } from '../process/helper-process.ts';
import type { HostDone, HostFailure, HostRequest } from './protocol.ts';

process.title = 'convd-engine-host';
const answers = createWriteStream('', { fd: 3 });
const send = (message: HelperMessage) => answers.write(`${JSON.stringify(message)}\n`);

/** Engines made and probed once per name and settings (a process serves one daemon: one settings). */
const engines = new Map<string, Promise<Engine>>();

function engineFor(name: string, settings: EngineSettings): Promise<Engine> {
  const key = `${name} ${JSON.stringify(settings)}`;
  let engine = engines.get(key);
  if (!engine) {
    const loader = engineLoaders(settings).find((candidate) => candidate.name === name && (candidate.isolated || candidate.isolateWhen !== undefined));
    if (!loader) return Promise.reject(new Error(`no engine "${name}" runs in the engine host`));
    engine = loader.load().then(async (loaded) => {
      await loaded.probe();
      return loaded;
    });
    engines.set(key, engine);
    engine.catch(() => engines.delete(key));
  }
  return engine;
}

async function handle(request: HostRequest): Promise<HostDone> {
  const engine = await engineFor(request.engine, request.settings);
  let last = -1;
  const output = await engine.convert({
    ...request.job,
    // Nothing here aborts: the parent kills this process instead, which stops any work at once.
    signal: new AbortController().signal,
    onProgress: (percent) => {
      const value = Math.floor(percent);
      if (value === last) return;
      last = value;
      send({ type: 'event', event: { progress: value } });
    },
  });
  return output ?? {};
}

function describe(error: unknown): HostFailure {
  if (error instanceof HandOver) return { kind: 'hand_over', message: error.message, ...(error.kept ? { kept: error.kept } : {}) };
  if (error instanceof ConversionFailure) return { kind: 'conversion', code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) };
  return { kind: 'internal', message: error instanceof Error ? (error.stack ?? error.message) : String(error) };
}

const requests = createInterface({ input: process.stdin, crlfDelay: Infinity });
send({ type: 'ready' });
for await (const line of requests) {
  let request: HostRequest;
  try {
    request = JSON.parse(line) as HostRequest;
  } catch {
    send({ type: 'result', ok: false, error: { kind: 'internal', message: 'the request is not JSON' } satisfies HostFailure });
    continue;
  }
  try {
    send({ type: 'result', ok: true, value: await handle(request) });
  } catch (error) {
    send({ type: 'result', ok: false, error: describe(error) });
  }
}
// stdin closed: the parent wants this process to end once the answers are out.
answers.end(() => process.exit(0));
