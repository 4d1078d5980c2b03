import type { ConversionPair, FormatInfo } from './pairs.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from './types.ts';

/**
 * Engines whose modules (sharp, pdf-lib with its fonts, ffmpeg probing, the data libraries)
 * load only when needed. A daemon probes every engine at start-up, so for it nothing changes:
 * `probe` loads the module. The in-process CLI passes what an earlier probe found (`known`, from
 * its format cache): then nothing loads until a conversion needs that one engine, and
 * `conv formats` or a PNG batch never pays for pdf-lib or ffmpeg.
 */

/** How to create one engine of the catalog, without importing its module first. */
export interface EngineLoader {
  /** Must equal the created engine's `name`. */
  name: string;
  /** The created engine's `maxConcurrentRuns`, known before it loads (the runner asks first). */
  maxConcurrentRuns?: number;
  /** Its work runs in the engine host, not on the caller's event loop (catalog.ts). */
  isolated?: boolean;
  /** The created engine counts an input's pages at submission (Engine.pagesOf: OCR); known before it loads. */
  countsPages?: boolean;
  /** Its work runs in the engine host when this says so for the job, else in the caller's process. */
  isolateWhen?: (job: EngineJob) => Promise<boolean>;
  /** The created engine's `startsClock`, known before it loads (the runner asks first). */
  startsClock?: boolean;
  /** The created engine's `readsAnyNameOf`, known before it loads (the runner asks first). */
  readsAnyNameOf?: readonly string[];
  /** The created engine's `readsBytesOf`, known before it loads (a submission asks first). */
  readsBytesOf?: readonly string[];
  /** The created engine's `picksReaderFromBytes`, known before it loads (the runner asks first). */
  picksReaderFromBytes?: boolean;
  /** The created engine's `namesItsInputOf`, known before it loads (the runner asks first). */
  namesItsInputOf?: readonly string[];
  load(): Promise<Engine>;
}

/** What a probe of one engine found, as plain data (cached by the CLI between runs). */
export interface KnownEngine {
  name: string;
  status: EngineStatus;
  formats: FormatInfo[];
  /** Empty when the engine is unavailable. */
  pairs: ConversionPair[];
}

export interface LazyEngine extends Engine {
  /** What the engine declared, once probed (undefined before). */
  known(): KnownEngine | undefined;
}

export function lazyEngine(loader: EngineLoader, known?: KnownEngine): LazyEngine {
  let loading: Promise<Engine> | null = null;
  let loaded: Engine | null = null;
  let ready: Promise<Engine> | null = null;
  let found: KnownEngine | undefined = known;

  const load = (): Promise<Engine> => {
    if (!loading) {
      const attempt = loader.load().then((engine) => {
        if (engine.name !== loader.name) throw new Error(`engine loader "${loader.name}" created an engine named "${engine.name}"`);
        return (loaded = engine);
      });
      loading = attempt;
      attempt.catch(() => {
        if (loading === attempt) loading = null; // a failed import is tried again next time
      });
    }
    return loading;
  };

  return {
    name: loader.name,
    maxConcurrentRuns: loader.maxConcurrentRuns,
    startsClock: loader.startsClock,
    readsAnyNameOf: loader.readsAnyNameOf,
    readsBytesOf: loader.readsBytesOf,
    picksReaderFromBytes: loader.picksReaderFromBytes,
    namesItsInputOf: loader.namesItsInputOf,
    // Only what was loaded has something running to end.
    close: async () => {
      await loaded?.close?.();
    },
    async probe(): Promise<EngineStatus> {
      if (known) return known.status;
      const engine = await load();
      const status = await engine.probe();
      ready = Promise.resolve(engine);
      found = { name: engine.name, status, formats: engine.formats(), pairs: status.available ? engine.pairs() : [] };
      return status;
    },
    pairs: () => (known ? known.pairs : loaded?.pairs() ?? []),
    formats: () => (known ? known.formats : loaded?.formats() ?? []),
    convert(job: EngineJob): Promise<EngineOutput | void> {
      return probed().then((engine) => engine.convert(job));
    },
    // Only an engine that counts pages has the method: the others are not loaded to say nothing.
    ...(loader.countsPages ? { pagesOf: (path: string, source: string) => probed().then((engine) => engine.pagesOf?.(path, source)) } : {}),
    known: () => found,
  };

  function probed(): Promise<Engine> {
    // Known from a cache: the engine is loaded and probed now (probing sets up its state, e.g.
    // which ffmpeg it runs), once, by the first conversion that needs it.
    if (!ready) {
      const attempt = load().then(async (engine) => {
        await engine.probe();
        return engine;
      });
      ready = attempt;
      attempt.catch(() => {
        if (ready === attempt) ready = null;
      });
    }
    return ready;
  }
}
