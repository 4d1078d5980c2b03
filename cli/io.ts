import type { Readable } from 'node:stream';

/** A stream the CLI writes to: process.stdout/stderr, or a capture in tests. */
export interface OutStream {
  write(chunk: string | Uint8Array): boolean;
  isTTY?: boolean;
  columns?: number;
  once?(event: 'drain', listener: () => void): unknown;
}

/** Everything the CLI takes from its process, so a run can be driven in-process by tests. */
export interface Io {
  stdout: OutStream & NodeJS.WritableStream;
  stderr: OutStream;
  stdin: Readable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function processIo(): Io {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}
