/** A job's signal that is also aborted when its time limit passes. */
export interface TimeLimited {
  signal: AbortSignal;
  /** True once the limit (not the job's own signal) aborted it. */
  timedOut(): boolean;
  /** Stops the timer and the listener on the job's signal. */
  dispose(): void;
}

/**
 * `AbortSignal.any([signal, AbortSignal.timeout(ms)])` without its cost per job (two signals, a
 * DOMException made on every call, listeners that live until the job signal is collected): one
 * controller, one timer, one listener, all released by `dispose`.
 */
export function withTimeLimit(signal: AbortSignal, ms: number): TimeLimited {
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort(signal.reason);
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error(`time limit of ${ms} ms passed`));
  }, ms);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => expired && !signal.aborted,
    dispose() {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}
