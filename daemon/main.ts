import { availableParallelism } from 'node:os';
import { buildProgram } from './program/program.ts';

// libuv's thread pool (4 threads by default) runs both sharp's image work and the daemon's file
// I/O (the store, spool files, downloads): image conversions at every worker must leave threads
// for the rest. Read by libuv when the pool first starts, after this line; a value set by the
// operator stands.
process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, 2 * availableParallelism() + 2));

await buildProgram().parseAsync(process.argv);
