import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Io } from '../../cli/io.ts';
import { run } from '../../cli/run.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CONV = join(ROOT, 'bin', 'conv');

/** A writable that keeps what was written, optionally pretending to be a terminal. */
export class Capture extends Writable {
  private chunks: Buffer[] = [];
  isTTY: boolean;
  columns = 100;

  constructor(tty = false) {
    super();
    this.isTTY = tty;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    callback();
  }

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

/** A clean environment: no settings leak in from the machine running the tests. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // CONV_FROM_SOURCE passes through so a developer can run the tests against cli/*.ts unbuilt.
  for (const key of ['PATH', 'HOME', 'TMPDIR', 'CONV_FROM_SOURCE']) if (process.env[key]) env[key] = process.env[key];
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

/** Runs the CLI in-process (fast: for parsing, help, profiles). */
export async function runConv(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; stdin?: Readable | string | Buffer; tty?: boolean } = {},
): Promise<RunResult> {
  const stdout = new Capture(options.tty);
  const stderr = new Capture(options.tty);
  const stdin = options.stdin instanceof Readable
    ? options.stdin
    : Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]);
  const io: Io = {
    stdout: stdout as unknown as Io['stdout'],
    stderr,
    stdin: stdin as Io['stdin'],
    env: options.env ?? cleanEnv(),
    cwd: options.cwd ?? process.cwd(),
  };
  const code = await run(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text, stdoutBytes: stdout.bytes };
}

/** Runs the real `bin/conv` as a child process. */
const TASKSET = '/usr/bin/taskset';

export async function spawnConv(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; stdin?: string | Buffer; timeoutMs?: number; onOneCpu?: boolean } = {},
): Promise<RunResult> {
  // onOneCpu: conv sees one core (taskset), whatever the machine has, so core-count defaults show.
  const [command, argv] = options.onOneCpu && existsSync(TASKSET)
    ? [TASKSET, ['-c', '0', process.execPath, CONV, ...args]]
    : [process.execPath, [CONV, ...args]];
  const child = spawn(command, argv, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? cleanEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.stdin ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const code = await new Promise<number>((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : 1))));
  clearTimeout(timer);
  const stdoutBytes = Buffer.concat(out);
  return { code, stdout: stdoutBytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), stdoutBytes };
}

export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
