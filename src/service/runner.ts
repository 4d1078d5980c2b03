import { stat } from 'node:fs/promises';
import { ConversionFailure } from '../errors/api-error.ts';
import { handedOver } from '../engines/hand-over.ts';
import { formatSeconds } from '../engines/units.ts';
import type { Engine, EngineOutput } from '../engines/types.ts';
import type { ConversionPair } from '../engines/pairs.ts';
import { resultFileName } from '../inputs/file-name.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import { BYTES_PER_MB } from '../model/plan.ts';
import { ConcurrencyGate } from '../queue/concurrency-gate.ts';
import type { Lane } from '../queue/job-source.ts';
import { JobCancelled } from '../queue/worker-pool.ts';
import { conversionCost, balanceOf } from './credits.ts';
import { explainOutputCap, outputLimit, outputLimitFailure, withinRoom } from './output-limit.ts';
import { planTimeLimitMs, withTimeLimit } from './time-limit.ts';
import { prepareJobFiles, removeJobDir } from './job-dir.ts';
import { withoutServerPaths } from './user-message.ts';
import type { LocalFile } from '../store/blob-store.ts';
import type { Store, UpdateOptions } from '../store/types.ts';
import type { ConversionService } from './conversion-service.ts';

/** Progress is kept in memory on every change but written at most this often per conversion. */
const PROGRESS_INTERVAL_MS = 250;

/** A URL input the disk has no room for, above its floor. */
function lowOnDisk(): ConversionFailure {
  return new ConversionFailure('fetch_failed', 'The server is low on disk space: the file could not be stored. Try again later.');
}

export interface RunnerLog {
  (event: string, fields: Record<string, unknown>): void;
}

/**
 * Runs one queued conversion to its end: fetch (URL inputs), engine with a time limit and the
 * job's AbortSignal, result into the blob store, then succeed (charge) or fail (release).
 * A cancel moves the state itself; a shutdown puts the conversion back in the queue.
 */
/**
 * `quickRuns`: the runs each engine that limits its own takes beyond its number for the workers'
 * quick lane (its gate keeps them for quick jobs).
 */
export function createRunner(service: ConversionService, log: RunnerLog = () => undefined, quickRuns = 0) {
  const { store, blobs, registry, config } = service;
  /** Per engine that limits its own runs: taken before the time limit starts, so waiting is free. */
  const gates = new Map<string, ConcurrencyGate>();
  const gateOf = (engine: Engine): ConcurrencyGate | null => {
    if (engine.maxConcurrentRuns === undefined) return null;
    let gate = gates.get(engine.name);
    if (!gate) gates.set(engine.name, (gate = new ConcurrencyGate(engine.maxConcurrentRuns, quickRuns)));
    return gate;
  };

  /** A conversion's read, check and change as one step (a transaction holding its lock, in PostgreSQL). */
  const transition = (id: string, update: (record: ConversionRecord, tx: Store) => Promise<ConversionRecord | null>, options?: UpdateOptions) =>
    store.exclusive(`conversion:${id}`, async (tx) => {
      const record = await tx.getConversion(id);
      return record ? update(record, tx) : null;
    }, options);

  /** `known`: the paths the engine was given (its input, its directory), with the words shown instead. */
  const fail = (id: string, code: string, message: string, details?: Readonly<Record<string, number | string>>, known: Readonly<Record<string, string>> = {}, engineMs = 0) =>
    transition(id, async (record, tx) => {
      if (record.status !== 'fetching' && record.status !== 'processing' && record.status !== 'queued') return null;
      // The engines' messages name the files they were given: the server's paths, never shown.
      const shown = withoutServerPaths(message, known);
      log('conversion.failed', { id, code, ...(shown !== message ? { engine_message: message } : {}) });
      return service.finish(record, {
        status: 'failed', credits: 0, error: { code, message: shown, ...(details ? { details: { ...details } } : {}) },
        ...(engineMs > 0 ? { engine_ms: engineMs } : {}),
      }, tx);
    });

  /** `releaseSlot`: see JobHandler; called once the engine has ended, whichever way. */
  return async function run(id: string, signal: AbortSignal, releaseSlot: () => void, lane: Lane = 'regular'): Promise<void> {
    const started = await transition(id, async (record, tx) => {
      if (record.status !== 'queued') return null;
      const status = record.input.kind === 'url' ? 'fetching' : 'processing';
      log('conversion.started', { id, status });
      return (await tx.updateConversion(id, {
        status, started_at: service.now().toISOString(), progress: status === 'processing' ? 0 : null,
      }))!;
      // Nobody is told of a start: on PostgreSQL its commit need not wait for the WAL's flush (a
      // daemon that dies still leaves it committed; only the database server's own crash loses it).
    }, { deferred: true });
    if (!started) return;
    // On disk before any engine runs: a conversion that takes the daemon down within a second of
    // its start (before a deferred write) would be found `queued` at every restart, never counted
    // as interrupted, and run again forever. Concurrent starts share the fsync (group commit).
    await store.flush();
    // The output of this run while it is not the conversion's result (yet): removed on any failure.
    let pendingOutput: string | null = null;
    let input: LocalFile | null = null;
    // The run's own directory: the input under the user's file name, the output, what engines add.
    let jobDir: string | null = null;
    let known: Record<string, string> = {};
    /** The engines' own time (not the wait for a free one), drawn on the account's hour. */
    let engineMs = 0;
    try {
      let record = started;
      if (record.input.kind === 'url') record = await fetchInput(record, signal);
      signal.throwIfAborted();

      const pair = registry.pair(record.source, record.target);
      const engine = pair ? registry.engine(pair.engine) : undefined;
      if (!pair || !engine) throw new ConversionFailure('internal_error', `No engine for ${record.source} -> ${record.target} is available.`);
      const extension = registry.format(record.target)?.extensions[0] ?? record.target;
      input = await blobs.localInput(id);
      jobDir = await blobs.workDirFor(id);
      const files = await prepareJobFiles(jobDir, input.path, record.original_name, registry.format(record.source)?.extensions[0] ?? record.source, extension);
      known = { [files.inputPath]: 'the input file', [files.outputPath]: 'the output file', [`${jobDir}/`]: '', [jobDir]: '.' };
      const { inputPath, outputPath } = files;
      pendingOutput = outputPath;
      const plan = config.plans[(await service.accounts.currentAccount(record.account_id))?.plan ?? 'unmetered'];
      const limitOf = (name: string) => planTimeLimitMs(config, plan, name);
      // A chain has the time of its steps together.
      const timeLimitOf = (chosen: ConversionPair) => chosen.steps ? chosen.steps.reduce((sum, step) => sum + limitOf(step.engine), 0) : limitOf(chosen.engine);
      const maxOutput = withinRoom(outputLimit(plan, record.input_size, config.outputCapRatio, config.outputCapFloorMb), service.diskRoom.headroom());

      let lastWrite = 0;
      let lastValue = -1;
      let writing = false;
      const onProgress = (percent: number) => {
        const value = Math.max(0, Math.min(99, Math.floor(percent)));
        const now = Date.now();
        // One write in flight at a time: a slow store is given fewer, not a queue of them.
        if (value === lastValue || now - lastWrite < PROGRESS_INTERVAL_MS || writing) return;
        lastValue = value;
        lastWrite = now;
        writing = true;
        // Not awaited: it may land after the conversion ended, and then changes nothing.
        void store.updateConversion(id, { progress: value }, { deferred: true, whileActive: true }).catch(() => undefined).finally(() => {
          writing = false;
        });
      };
      const convertWithinLimit = async (chosen: ConversionPair, engine: Engine): Promise<EngineOutput | void> => {
        const timeoutMs = timeLimitOf(chosen);
        const limited = withTimeLimit(signal, timeoutMs, engine.startsClock === true);
        // The engine's own time, as its limit counts it: from the start of the work (after a
        // LibreOffice instance or an engine host is started or free), not the wait before.
        let began = engine.startsClock === true ? null : performance.now();
        const startClock = () => {
          began ??= performance.now();
          limited.start();
        };
        try {
          return await engine.convert({
            inputPath, outputPath, source: record.source, target: record.target,
            variant: record.variant, options: { ...record.options, ...record.secret_options }, signal: limited.signal, onProgress, maxOutputBytes: maxOutput.bytes,
            startClock,
            timeLimitMs: timeoutMs,
            tenant: record.account_id,
            ...(lane === 'quick' ? { quick: true } : {}),
            ...(record.input.kind === 'url' ? { sourceUrl: record.input.url } : {}),
          });
        } catch (error) {
          if (limited.timedOut()) {
            throw new ConversionFailure('timeout', `The conversion took longer than the limit of ${formatSeconds(timeoutMs)}.`);
          }
          throw explainOutputCap(error, maxOutput);
        } finally {
          if (began !== null) engineMs += Math.round(performance.now() - began);
          limited.dispose();
        }
      };
      const convertOn = (chosen: ConversionPair, engine: Engine): Promise<EngineOutput | void> => {
        const gate = gateOf(engine);
        return gate ? gate.run(signal, () => convertWithinLimit(chosen, engine), lane === 'quick') : convertWithinLimit(chosen, engine);
      };
      let produced: EngineOutput | void;
      try {
        produced = await convertOn(pair, engine).catch((error: unknown) => {
          const handedTo = handedOver(error, pair, (name) => registry.engine(name));
          return convertOn(handedTo.pair, handedTo.engine);
        });
      } finally {
        releaseSlot();
      }
      signal.throwIfAborted();
      const size = produced?.size ?? (await stat(outputPath)).size;
      // Every engine's result is measured, whether or not the engine stopped at the cap itself.
      if (size > maxOutput.bytes) throw outputLimitFailure(maxOutput, size);
      await blobs.adoptResult(id, outputPath);
      pendingOutput = null;
      const ended = await transition(id, async (current, tx) => {
        if (current.status !== 'processing') return null;
        const now = service.now();
        const cost = plan.credits_type === 'unmetered' ? 0 : conversionCost(registry.creditWeight(pair), current.input_size);
        log('conversion.succeeded', { id, size });
        return service.finish(current, {
          status: 'succeeded', progress: 100, credits: cost, charged_at: cost > 0 ? now.toISOString() : null, engine_ms: engineMs,
          ...(produced?.warnings?.length ? { warnings: produced.warnings } : {}),
          result: {
            filename: resultFileName(current.original_name, extension),
            size,
            mime: registry.format(current.target)?.mime ?? 'application/octet-stream',
            expires_at: new Date(now.getTime() + plan.result_ttl_hours * 3_600_000).toISOString(),
          },
        }, tx);
      });
      // Cancelled while the result was being written: the file belongs to nobody.
      if (!ended) await blobs.delete('results', id);
    } catch (error) {
      // Gone before the end is recorded: once a client sees the failure, nothing of it is on disk
      // (a removal that fails here is tried again below; the end is recorded either way).
      if (pendingOutput) await blobs.discardOutput(pendingOutput).then(() => (pendingOutput = null), () => undefined);
      if (jobDir) await removeJobDir(jobDir).then(() => (jobDir = null), () => undefined);
      if (error instanceof JobCancelled || signal.aborted) {
        const why = error instanceof JobCancelled ? error.why : signal.reason instanceof JobCancelled ? signal.reason.why : 'cancelled';
        if (why === 'shutdown') await requeue(id);
        // Cancelled while running: the time it used is drawn all the same (a cancel just before
        // the limit is not a way around the allowance).
        else if (engineMs > 0) await store.updateConversion(id, { engine_ms: engineMs }, { deferred: true }).catch(() => undefined);
        return;
      }
      if (error instanceof ConversionFailure) await fail(id, error.code, error.message, error.details, known, engineMs);
      else {
        log('conversion.internal_error', { id, error: error instanceof Error ? error.stack : String(error) });
        await fail(id, 'internal_error', 'The conversion failed because of an internal error.', undefined, {}, engineMs);
      }
    } finally {
      if (pendingOutput) await blobs.discardOutput(pendingOutput);
      if (jobDir) await removeJobDir(jobDir);
      await input?.release();
      // No `await store.flush()` here: the store writes these changes at once by itself (group
      // commit), and waiting for the fsync held this worker's slot idle for every conversion
      // (a quarter of the wall time of `npm run bench -- convert-e2e` on a busy disk).
    }
  };

  async function fetchInput(record: ConversionRecord, signal: AbortSignal): Promise<ConversionRecord> {
    if (record.input.kind !== 'url') return record;
    const account = await service.accounts.currentAccount(record.account_id);
    const plan = config.plans[account?.plan ?? 'unmetered'];
    const spool = blobs.spoolPath();
    // got and the SSRF agents load with the first URL input, not with every in-process CLI run.
    const { fetchUrlToFile } = await import('../inputs/fetch-url.ts');
    try {
      const planMax = plan.max_upload_mb * BYTES_PER_MB;
      // A URL's file is spooled no further than the disk floor allows (as an upload's is).
      const room = service.diskRoom.headroom();
      if (room <= 0) throw lowOnDisk();
      const fetched = await fetchUrlToFile(record.input.url, spool, {
        maxBytes: Math.min(planMax, room),
        timeoutMs: config.urlFetchTimeoutMs,
        allowPrivate: config.allowPrivateUrls,
        allowedNetworks: config.urlAllowNetworks,
        signal,
      }).catch((error: unknown) => {
        if (room < planMax && error instanceof ConversionFailure && error.code === 'file_too_large') throw lowOnDisk();
        throw error;
      });
      await blobs.adoptInput(record.id, spool);
      const pair = registry.pair(record.source, record.target)!;
      const cost = plan.credits_type === 'unmetered' ? 0 : conversionCost(registry.creditWeight(pair), fetched.bytes);
      const moved = await transition(record.id, async (current, tx) => {
        if (current.status !== 'fetching') return null;
        // A URL's size is known only now; a larger bracket needs the balance to cover it.
        if (cost > current.reserved_credits && account) {
          const balance = await balanceOf(tx, account);
          if (balance.available < cost - current.reserved_credits) {
            throw new ConversionFailure('file_too_large', `The file's size (${Math.ceil(fetched.bytes / BYTES_PER_MB)} MB) costs ${cost} credits, more than the balance covers.`);
          }
        }
        return (await tx.updateConversion(record.id, {
          status: 'processing', input_size: fetched.bytes, progress: 0, reserved_credits: Math.max(cost, current.reserved_credits),
        }, { deferred: true }))!;
      });
      if (!moved) throw signal.reason ?? new JobCancelled(record.id, 'cancelled');
      return moved;
    } finally {
      await blobs.discardSpool(spool);
    }
  }

  async function requeue(id: string): Promise<void> {
    await transition(id, async (record, tx) => {
      if (record.status !== 'fetching' && record.status !== 'processing') return null;
      return (await tx.updateConversion(id, { status: 'queued', progress: null, started_at: null }))!;
    });
  }
}

