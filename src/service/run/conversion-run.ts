import { stat } from 'node:fs/promises';
import type { EngineOutput } from '../../engines/types.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair } from '../../engines/pairs.ts';
import { resultFileName } from '../../inputs/file-name.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import type { Plan } from '../../model/plan.ts';
import type { Lane } from '../../queue/job-source.ts';
import { JobCancelled } from '../../queue/worker-pool.ts';
import type { ConversionService } from '../conversion-service.ts';
import { creditCost } from '../merge-bundle.ts';
import { outputLimit, outputLimitFailure, withinRoom } from '../output-limit.ts';
import { planTimeLimitMs } from '../time-limit.ts';
import { convertOnEngines, type EngineCall } from './engine-call.ts';
import { mergeSources } from './merge-sources.ts';
import { refuseOptionsNotOffered } from './options-offered.ts';
import type { EngineGates } from './engine-gates.ts';
import { fetchInput } from './fetch-input.ts';
import { progressWriter } from './progress.ts';
import { RunFiles } from './run-files.ts';
import { runsFromBytes, runsWithoutNames } from '../engine-input.ts';
import type { RunDirs } from '../job-dir.ts';
import type { RunnerLog } from './runner-log.ts';
import type { RunTransitions } from './transitions.ts';

/** What every run of a runner shares. */
export interface RunnerParts {
  service: ConversionService;
  moves: RunTransitions;
  gates: EngineGates;
  log: RunnerLog;
  /** The runs' directories, kept from one run to the next. */
  dirs: RunDirs;
}

/**
 * One queued conversion run to its end: fetch (URL inputs), engine with a time limit and the
 * job's AbortSignal, result into the blob store, then succeed (charge) or fail (release).
 * A cancel moves the state itself; a shutdown puts the conversion back in the queue.
 */
export class ConversionRun {
  private readonly files: RunFiles;
  /** The engines' own time (not the wait for a free one), drawn on the account's hour. */
  private engineMs = 0;

  constructor(
    private readonly parts: RunnerParts,
    private readonly id: string,
    private readonly signal: AbortSignal,
    /** See JobHandler; called once the engine has ended, whichever way. */
    private readonly releaseSlot: () => void,
    private readonly lane: Lane,
  ) {
    this.files = new RunFiles(parts.service.blobs, parts.dirs, id);
  }

  async run(): Promise<void> {
    const { service, moves } = this.parts;
    const started = await moves.start(this.id);
    if (!started) return;
    // On disk before any engine runs: a conversion that takes the daemon down within a second of
    // its start (before a deferred write) would be found `queued` at every restart, never counted
    // as interrupted, and run again forever. Concurrent starts share the fsync (group commit).
    // One in none of the store's files (a submission with `wait`, its client told nothing yet)
    // is gone after such a crash, not run again: its start goes to disk with its end, one write.
    // Once written, its deferred start goes now, whichever write held it first (`conversion`).
    if (service.store.written?.(this.id) !== false) await service.store.flush({ conversion: this.id });
    try {
      const record = started.input.kind === 'url' ? await fetchInput(service, moves, started, this.signal) : started;
      this.signal.throwIfAborted();
      await this.convert(record);
    } catch (error) {
      await this.files.discardBeforeFailure();
      await this.settle(error);
    } finally {
      await this.files.release();
      // No `await store.flush()` here: the store writes these changes at once by itself (group
      // commit), and waiting for the fsync held this worker's slot idle for every conversion
      // (a quarter of the wall time of `npm run bench -- convert-e2e` on a busy disk).
    }
  }

  /** The engine's work on a started conversion, through to its result kept and its success recorded. */
  private async convert(record: ConversionRecord): Promise<void> {
    const { service, moves, gates } = this.parts;
    const { registry, config, blobs } = service;
    const pair = registry.pairFor(record.source, record.target, record.options);
    const engine = pair ? registry.engine(pair.engine) : undefined;
    if (!pair || !engine) throw new ConversionFailure('internal_error', `No engine for ${record.source} -> ${record.target} is available.`);
    refuseOptionsNotOffered(registry, record);
    const extension = registry.format(record.target)?.extensions[0] ?? record.target;
    // Without a run directory where nothing in the work shows a file's name; from the record's
    // bytes where the input came in it and the engine reads them.
    const { inputPath, inputName, outputPath, inputBytes } = await this.files.prepare(record, registry.format(record.source)?.extensions[0] ?? record.source, extension, {
      anyName: runsWithoutNames(engine, pair, record), bytes: runsFromBytes(engine, pair, record),
    });
    const plan = config.plans[(await service.accounts.currentAccount(record.account_id))?.plan ?? 'unmetered'];
    const limitOf = (name: string) => planTimeLimitMs(config, plan, name);
    // A chain has the time of its steps together.
    const timeLimitOf = (chosen: ConversionPair) => chosen.steps ? chosen.steps.reduce((sum, step) => sum + limitOf(step.engine), 0) : limitOf(chosen.engine);
    const maxOutput = withinRoom(outputLimit(plan, record.input_size, config.outputCapRatio, config.outputCapFloorMb), service.diskRoom.headroom());
    let produced: EngineOutput | void;
    const progress = progressWriter(service.store, this.id);
    try {
      const call: EngineCall = {
        record, inputPath, ...(inputName ? { inputName } : {}), ...(inputBytes ? { inputBytes } : {}), outputPath, signal: this.signal, lane: this.lane, maxOutput, timeLimitOf, maxPages: plan.max_pages, maxOcrPages: plan.max_ocr_pages,
        onProgress: progress.report,
        onEngineTime: (ms) => {
          this.engineMs += ms;
        },
      };
      if (record.inputs !== undefined && record.inputs.length > 0) {
        // A merge (or an input with images to draw): its files as PDFs first, then the one pdf -> pdf with all of them.
        const { pdfs, bundled, markImages } = await mergeSources(call, record.inputs, record.mark_images ?? [], registry, gates, pair.readsBundles === true);
        const files = record.inputs.length;
        const onProgress = (percent: number) => call.onProgress(Math.floor(((files + percent / 100) / (files + 1)) * 100));
        produced = await convertOnEngines({
          ...call, ...(bundled ? { bundledInputs: bundled } : { inputPath: pdfs[0]!, ...(pdfs.length > 1 ? { inputPaths: pdfs } : {}) }),
          ...(markImages ? { markImages } : {}), onProgress,
        }, pair, engine, registry, gates);
      } else produced = await convertOnEngines(call, pair, engine, registry, gates);
    } finally {
      progress.stop();
      this.releaseSlot();
    }
    this.signal.throwIfAborted();
    const size = produced?.size ?? (await stat(outputPath)).size;
    // Every engine's result is measured, whether or not the engine stopped at the cap itself.
    if (size > maxOutput.bytes) throw outputLimitFailure(maxOutput, size);
    await this.files.adoptResult(outputPath);
    const ended = await moves.succeed(this.id, size, (current) => this.success(current, { plan, pair, produced, size, extension }));
    // Cancelled while the result was being written: the file belongs to nobody.
    if (!ended) await blobs.delete('results', this.id);
  }

  /** A success as recorded: the charge (none on an unmetered plan) and the result as clients see it. */
  private success(current: ConversionRecord, made: { plan: Plan; pair: ConversionPair; produced: EngineOutput | void; size: number; extension: string }): Partial<ConversionRecord> {
    const { registry } = this.parts.service;
    const now = this.parts.service.now();
    const cost = made.plan.credits_type === 'unmetered' ? 0 : creditCost(registry, made.pair, current.input_size, current.inputs);
    return {
      progress: 100, credits: cost, charged_at: cost > 0 ? now.toISOString() : null, engine_ms: this.engineMs,
      ...(made.produced?.warnings?.length ? { warnings: made.produced.warnings } : {}),
      result: {
        filename: resultFileName(current.original_name, made.produced?.archive ? 'zip' : made.extension),
        size: made.size,
        mime: made.produced?.archive ? 'application/zip' : registry.format(current.target)?.mime ?? 'application/octet-stream',
        expires_at: new Date(now.getTime() + made.plan.result_ttl_hours * 3_600_000).toISOString(),
      },
    };
  }

  /** A run that did not succeed: back to the queue at a shutdown, left as it is at a cancel, failed otherwise. */
  private async settle(error: unknown): Promise<void> {
    const { service, moves, log } = this.parts;
    if (error instanceof JobCancelled || this.signal.aborted) {
      const why = error instanceof JobCancelled ? error.why : this.signal.reason instanceof JobCancelled ? this.signal.reason.why : 'cancelled';
      if (why === 'shutdown') await moves.requeue(this.id);
      // Cancelled while running: the time it used is drawn all the same (a cancel just before
      // the limit is not a way around the allowance).
      else if (this.engineMs > 0) await service.store.updateConversion(this.id, { engine_ms: this.engineMs }, { deferred: true }).catch(() => undefined);
      return;
    }
    if (error instanceof ConversionFailure) await moves.fail(this.id, error.code, error.message, error.details, this.files.known, this.engineMs);
    else {
      log('conversion.internal_error', { id: this.id, error: error instanceof Error ? error.stack : String(error) });
      await moves.fail(this.id, 'internal_error', 'The conversion failed because of an internal error.', undefined, {}, this.engineMs);
    }
  }
}
