import { runCleanups } from './cleanup.ts';
import { processIo } from './io.ts';
import { run } from './run.ts';
import { removePartialFilesSync } from './save.ts';

/** The `conv` entry point (bin/conv loads the compiled dist/cli/main.js). */

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    // An interrupted download leaves no partial file, an in-process service no temp directory;
    // a conversion on a server keeps running (follow it with `conv get`). A second Ctrl-C
    // during the cleanup ends the process at once (the handler was registered once).
    removePartialFilesSync();
    void runCleanups(2000).finally(() => process.exit(code));
  });
}

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
