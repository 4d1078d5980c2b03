import { spawn, type ChildProcess } from 'node:child_process';
import { CONV, ROOT, cleanEnv } from './cli-helpers.ts';

/**
 * A long-running `conv` child process (watch, webhook listen) that tests talk to while it runs:
 * wait for output to appear, send signals, await the exit code.
 */
export interface ConvProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Lines of stdout parsed as JSON (NDJSON), complete lines only. */
  jsonLines<T = Record<string, unknown>>(): T[];
  /** Resolves once `test` passes on the output so far (checked on every chunk), else rejects after `timeoutMs`. */
  waitFor(test: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (128 + n when killed by a signal that was not handled). */
  exited: Promise<number>;
  /** SIGKILL if still running (test clean-up). */
  kill(): void;
}

export function startConv(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): ConvProcess {
  const child = spawn(process.execPath, [CONV, ...args], {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    notify();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    notify();
  });
  const exited = new Promise<number>((resolve) => {
    child.on('close', (code, signal) => {
      notify();
      resolve(code ?? (signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 137));
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    jsonLines: <T>() => out.split('\n').slice(0, -1).filter(Boolean).map((line) => JSON.parse(line) as T),
    waitFor(test, what, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          let passed = false;
          try {
            passed = test();
          } catch {
            passed = false;
          }
          if (passed) {
            done();
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`conv exited (${child.exitCode ?? child.signalCode}) before ${what}\nstdout:\n${out}\nstderr:\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${what}\nstdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    exited,
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
