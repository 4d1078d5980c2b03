/**
 * Ctrl-C for long-running commands (`watch`, `webhook listen`, `dashboard`). For them a signal is
 * the normal way to end, so instead of the default (clean up, exit 130: see main.ts) a command
 * may take the signal and stop itself gracefully. One handler at a time; it is consumed when a
 * signal arrives, and the command may register another for the next signal (e.g. "first Ctrl-C
 * finishes the work in flight, the second cancels it"). With no handler, main.ts exits.
 */
export type StopHandler = (signal: NodeJS.Signals) => void;

let handler: StopHandler | null = null;

/** Registers `fn` for the next SIGINT/SIGTERM; the returned function unregisters it. */
export function onStopRequest(fn: StopHandler): () => void {
  handler = fn;
  return () => {
    if (handler === fn) handler = null;
  };
}

/** Called by the signal handler: true when a command took the signal. */
export function requestStop(signal: NodeJS.Signals): boolean {
  const current = handler;
  if (!current) return false;
  handler = null;
  current(signal);
  return true;
}

/** Resolves at the next stop request (for commands whose whole life is "run until Ctrl-C"). */
export function untilStopRequested(): { promise: Promise<NodeJS.Signals>; cancel: () => void } {
  let cancel = () => undefined as void;
  const promise = new Promise<NodeJS.Signals>((resolve) => {
    cancel = onStopRequest(resolve);
  });
  return { promise, cancel };
}
