/**
 * A bench's baseline in a process of its own at the engines' priority (niceness 10, in a session
 * of its own whose autogroup is niced too: src/engines/process/group.ts), so that it competes for
 * the cores as convd's engine processes do. It talks in lines: requests on stdin, one JSON answer
 * per line on stdout.
 */
import { createInterface } from 'node:readline';
import { ENGINE_NICENESS, lowerSessionPriority, wrapped } from '../../src/engines/process/group.ts';
import { ROOT } from './daemon.ts';
import { spawnTracked, stopChild } from './processes.ts';

export interface BaselineProcess {
  /** Sends one line (a newline is added). */
  send(line: string): void;
  /** The next answer, parsed. */
  next<T>(): Promise<T>;
  /**
   * Closes stdin and waits up to `graceMs` for the process to end by itself (a baseline that
   * shuts down what it started, LibreOffice say, must not get a signal first), then stops it.
   */
  stop(graceMs?: number): Promise<void>;
}

export function startBaseline(command: string, args: string[], what: string): BaselineProcess {
  const [file, argv] = wrapped(null, command, args, ENGINE_NICENESS);
  const child = spawnTracked(file, argv, { cwd: ROOT, detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
  lowerSessionPriority(child, ENGINE_NICENESS);
  const lines = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  return {
    send: (line) => child.stdin!.write(`${line}\n`),
    async next<T>(): Promise<T> {
      const line = await iterator.next();
      if (line.done) throw new Error(`${what} ended early (see its stderr above)`);
      return JSON.parse(line.value) as T;
    },
    async stop(graceMs = 0) {
      const exited = new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
      child.stdin!.end();
      if (graceMs > 0) await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, graceMs))]);
      lines.close();
      await stopChild(child, 5_000);
    },
  };
}
