import { runCleanups } from './cleanup.ts';
import { requestStop } from './interrupt.ts';
import { processIo } from './io.ts';
import { run } from './run.ts';
import { removePartialFilesSync } from './partial-files.ts';

/** The `conv` entry point (bin/conv loads the compiled dist/cli/main.js). */

/**
 * An interrupted download leaves no partial file, an in-process service no temp directory; a
 * conversion on a server keeps running (follow it with `conv get`). A long-running command
 * (watch, webhook listen, dashboard) may take the signal instead and stop itself (interrupt.ts);
 * once nothing takes it, the cleanup runs, and a signal during the cleanup ends the process at
 * once (no handler is registered any more).
 */
function listen(signal: NodeJS.Signals, code: number): void {
  process.once(signal, () => {
    if (requestStop(signal)) return listen(signal, code);
    removePartialFilesSync();
    void runCleanups(2000).finally(() => process.exit(code));
  });
}
listen('SIGINT', 130);
listen('SIGTERM', 143);

// A closed pipe (`conv list | head -1`) is not an error worth a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await run(process.argv.slice(2), processIo());
process.exitCode = code;
// Anything still holding the event loop (a keep-alive socket, a worker) must not keep a finished
// command alive; unref'd, this fires only if something does.
setTimeout(() => process.exit(code), 1000).unref();
