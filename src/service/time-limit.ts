import type { Plan, EngineKind } from '../model/plan.ts';
import type { ServiceConfig } from './config.ts';

/** How long a conversion of `plan` may run on `engine`: the plan's limit under the daemon's ceiling (engine_timeout_ms). */
export function planTimeLimitMs(config: Pick<ServiceConfig, 'engineTimeoutMs' | 'defaultEngineTimeoutMs'>, plan: Plan, engine: string): number {
  const ceiling = config.engineTimeoutMs[engine] ?? config.defaultEngineTimeoutMs;
  const planned = plan.time_limits[engine as EngineKind];
  return planned === undefined ? ceiling : Math.min(ceiling, planned * 1000);
}

/** A job's signal that is also aborted when its time limit passes. */
export interface TimeLimited {
  signal: AbortSignal;
  /** True once the limit (not the job's own signal) aborted it. */
  timedOut(): boolean;
  /** Starts the clock of a limit made with `deferred` (later calls do nothing). */
  start(): void;
  /** Stops the timer and the listener on the job's signal. */
  dispose(): void;
}

/**
 * `AbortSignal.any([signal, AbortSignal.timeout(ms)])` without its cost per job (two signals, a
 * DOMException made on every call, listeners that live until the job signal is collected): one
 * controller, one timer, one listener, all released by `dispose`. With `deferred`, the clock
 * starts at `start()`: an engine that must first get a helper process ready (start it, wait for
 * a free one) starts it when the work begins, so the wait is not counted against the job.
 */
export function withTimeLimit(signal: AbortSignal, ms: number, deferred = false): TimeLimited {
  const controller = new AbortController();
  let expired = false;
  let timer: NodeJS.Timeout | undefined;
  let disposed = false;
  const onAbort = () => controller.abort(signal.reason);
  const start = () => {
    if (timer || disposed) return;
    timer = setTimeout(() => {
      expired = true;
      controller.abort(new Error(`time limit of ${ms} ms passed`));
    }, ms);
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  if (!deferred) start();
  return {
    signal: controller.signal,
    timedOut: () => expired && !signal.aborted,
    start,
    dispose() {
      disposed = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}
