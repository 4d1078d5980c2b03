/**
 * Work to undo when the process is interrupted (Ctrl-C): an in-process service removes its temp
 * directory, clients close their connections. The signal handler in main.ts runs these, bounded
 * in time, before it exits.
 */
const cleanups = new Set<() => Promise<void>>();

/** Registers `fn`; the returned function unregisters it (call it once the work is done). */
export function addCleanup(fn: () => Promise<void>): () => void {
  cleanups.add(fn);
  return () => void cleanups.delete(fn);
}

export async function runCleanups(timeoutMs: number): Promise<void> {
  const pending = [...cleanups].map((fn) => fn().catch(() => undefined));
  cleanups.clear();
  await Promise.race([Promise.all(pending), new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
}
