import { fileURLToPath } from 'node:url';
import { ConversionFailure, HandOver } from '../../errors/api-error.ts';
import { CONVERSION_ERROR_CODES, type ConversionErrorCode } from '../../errors/codes.ts';
import type { HelperLifecycle, HelperPool, PoolStatus } from '../process/helper-pool.ts';
import { engineEnvironment } from '../process/group.ts';
import type { HelperCommand } from '../process/helper-process.ts';
import type { EngineJob, EngineOutput, EngineSettings } from '../types.ts';
import type { HostDone, HostFailure, HostProgress, HostRequest } from './protocol.ts';

export interface EngineHostOptions {
  /** Host processes at most: as many as conversions may run at once. */
  processes: number;
  /** Keep one idle host started while others work (the workers' quick lane finds it warm). */
  spare?: boolean;
  /** Memory of one host process (resident, and V8's heap limit), in MiB. */
  memoryLimitMb: number;
  /** A host process is replaced after this many conversions. */
  recycleAfter?: number;
  /** A host process idle this long ends (its memory comes back); the next conversion starts one. */
  idleStopMs?: number;
  startTimeoutMs?: number;
  onLifecycle?: (event: HelperLifecycle) => void;
}

type Machinery = typeof import('../process/helper-process.ts') & { HelperPool: typeof HelperPool; ENGINE_NICENESS: number; pool: HelperPool };

async function loadMachinery(): Promise<Omit<Machinery, 'pool'>> {
  const [process, { HelperPool }, { ENGINE_NICENESS }] = await Promise.all([
    import('../process/helper-process.ts'), import('../process/helper-pool.ts'), import('../process/group.ts'),
  ]);
  return { ...process, HelperPool, ENGINE_NICENESS };
}

const DEFAULT_RECYCLE_AFTER = 500;
const DEFAULT_IDLE_STOP_MS = 10 * 60_000;
const DEFAULT_START_TIMEOUT_MS = 20_000;

/** V8's fatal messages when the heap limit is reached: a memory failure, not a crash. */
const HEAP_EXHAUSTED = /heap out of memory|Reached heap limit|allocation failed/i;

/**
 * The host process runs the same TypeScript sources under tsx in development (and tests) and the
 * compiled JavaScript of dist/ in production: the file next to this one, with this one's extension.
 */
function hostCommand(memoryLimitMb: number): HelperCommand {
  const here = import.meta.url;
  const extension = here.endsWith('.ts') ? '.ts' : '.js';
  const entry = fileURLToPath(new URL(`./host-main${extension}`, here));
  // Only what the host needs of Node's flags: a TypeScript loader when it runs from sources, its
  // heap limit. The parent's own flags (an inspector port, its heap size) are not passed on.
  const loader = extension === '.ts' ? ['--import', import.meta.resolve('tsx')] : [];
  return {
    command: process.execPath,
    args: [...loader, `--max-old-space-size=${memoryLimitMb}`, entry],
    env: engineEnvironment(),
  };
}

/**
 * The engines written in JavaScript, run in child processes (engine/host/host-main.ts) instead of
 * on the caller's event loop: a conversion's time limit and cancel kill its process, a memory
 * limit ends it, a crash or a heap blow-up fails that conversion only. One host process per
 * conversion running, started on first use and kept warm for the next.
 */
export class EngineHost {
  /**
   * The pool and its process machinery load with the first conversion: `conv formats` and every
   * in-process run that converts no document make an EngineHost too (a few ms of start-up each).
   */
  private machinery: Promise<Machinery> | null = null;
  private closed = false;

  constructor(private readonly options: EngineHostOptions) {}

  private load(): Promise<Machinery> {
    this.machinery ??= loadMachinery().then((parts) => {
      const { options } = this;
      const pool = new parts.HelperPool({
        name: 'engine-host',
        size: options.processes,
        // Two warm spares, one for each place of the workers' quick lane (as the LibreOffice pool
        // keeps): with one, a quick conversion that came while the spare was being replaced (after
        // a hostile conversion's host was killed) waited seconds for its start.
        ...(options.spare ? { spares: { count: 2, whenBusy: 1 } } : {}),
        recycleAfter: options.recycleAfter ?? DEFAULT_RECYCLE_AFTER,
        idleStopMs: options.idleStopMs ?? DEFAULT_IDLE_STOP_MS,
        onLifecycle: options.onLifecycle,
        helper: () => ({
          name: 'engine-host',
          command: hostCommand(options.memoryLimitMb),
          startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
          memoryLimitBytes: options.memoryLimitMb * 1024 * 1024,
          niceness: parts.ENGINE_NICENESS,
        }),
      });
      return { ...parts, pool };
    });
    return this.machinery;
  }

  async convert(engine: string, settings: EngineSettings, job: EngineJob): Promise<EngineOutput> {
    const { signal, onProgress, startClock, ...plain } = job;
    // The lifecycle callback is the daemon's own: the host process is told the settings only.
    const { onLifecycle, ...sent } = settings;
    const request: HostRequest = { engine, settings: sent, job: plain };
    if (this.closed) throw new Error('the engine host is closed');
    const parts = await this.load();
    try {
      const done = (await parts.pool.run(request, {
        signal,
        onEvent: (event) => onProgress((event as HostProgress).progress),
        onStart: startClock,
        quick: job.quick === true,
      })) as HostDone;
      return done;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw this.failureOf(error, parts);
    }
  }

  private failureOf(error: unknown, { HelperDied, HelperTaskError }: Machinery): Error {
    if (error instanceof HelperTaskError) {
      const failure = error.error as HostFailure;
      if (failure.kind === 'hand_over') return new HandOver(failure.message, failure.kept);
      if (failure.kind === 'conversion' && (CONVERSION_ERROR_CODES as readonly string[]).includes(failure.code)) {
        return new ConversionFailure(failure.code as ConversionErrorCode, failure.message, failure.details);
      }
      return new Error(`engine host: ${failure.message}`);
    }
    if (error instanceof HelperDied) {
      const { exit } = error;
      if (exit.end === 'memory' || HEAP_EXHAUSTED.test(exit.stderrTail)) {
        return new ConversionFailure('memory_limit', `The conversion needed more memory than its limit of ${this.options.memoryLimitMb} MB.`);
      }
      return new ConversionFailure('conversion_failed', `The conversion engine stopped unexpectedly (${exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`}).`);
    }
    return error instanceof Error ? error : new Error(String(error));
  }

  /** The pool's figures; all zero before the first conversion. */
  async status(): Promise<PoolStatus> {
    if (!this.machinery) return { size: this.options.processes, running: 0, busy: 0, started: 0, lost: 0 };
    return (await this.machinery).pool.status();
  }

  get memoryLimitMb(): number {
    return this.options.memoryLimitMb;
  }

  async close(graceMs?: number): Promise<void> {
    this.closed = true;
    if (this.machinery) await (await this.machinery).pool.close(graceMs);
  }
}
