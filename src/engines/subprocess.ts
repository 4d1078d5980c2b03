import { spawn, type ChildProcess } from 'node:child_process';
import { ConversionFailure } from '../errors/api-error.ts';
import { formatSeconds } from './units.ts';
import { dropWhenLong, execFailure, findParentDeathWrapper, killGroup, lowerSessionPriority, offerToOomKiller, trackGroup, untrackGroup, wrapped } from './process/group.ts';

export { killAllChildren, liveChildPids } from './process/group.ts';

export interface RunOptions {
  /** Aborting kills the whole process group; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Wall-clock limit; when it passes the group is killed and the promise rejects with ConversionFailure('timeout'). */
  timeoutMs?: number;
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Told the process's pid once it runs (to read its processor time, say). */
  onSpawn?: (pid: number) => void;
  /** How much of stderr is kept for error messages (the end of it). Default 64 KiB. */
  stderrTailBytes?: number;
  /** Time between SIGTERM and SIGKILL when the group is stopped. Default 1500 ms. */
  killGraceMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * The kernel kills the process when this one dies, even by SIGKILL, which no handler here can
   * catch: on Linux through util-linux's `setpriv --pdeathsig` (where there is none, this does
   * nothing). For the long runs (a conversion), so that a daemon killed -9 leaves no ffmpeg
   * converting on into its data dir. A command that cannot be run rejects as it would unwrapped
   * (ENOENT, EACCES).
   */
  dieWithParent?: boolean;
  /** Run at this niceness (a lower priority than the caller's: group.ts `wrapped`). */
  niceness?: number;
  /**
   * The most memory (address space, MiB) the process may map, through prlimit (group.ts
   * `findPrlimit`): past it its allocations fail and it exits, as engines do when out of memory.
   */
  memoryLimitMb?: number;
}

export interface RunResult {
  /** Exit code, or null when the process ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last `stderrTailBytes` of stderr, cut at a line start. */
  stderrTail: string;
}

const DEFAULT_TAIL_BYTES = 64 * 1024;
const DEFAULT_GRACE_MS = 1500;
/** A "line" longer than this (binary junk, a progress bar without newlines) is cut, never held whole. */
const MAX_LINE_CHARS = 16 * 1024;

/**
 * Splits a stream of text into lines (\n, \r\n or a lone \r, which ffmpeg uses for status lines)
 * without ever holding more than MAX_LINE_CHARS of an unfinished line.
 */
class LineSplitter {
  private pending = '';
  private overflowed = false;

  constructor(private readonly emit: (line: string) => void) {}

  push(chunk: string): void {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      this.append(chunk.slice(start, i));
      this.flushLine();
      // \r\n counts as one line end.
      if (ch === 13 && chunk.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.append(chunk.slice(start));
  }

  end(): void {
    if (this.pending.length > 0 || this.overflowed) this.flushLine();
  }

  private append(text: string): void {
    if (this.overflowed || text.length === 0) return;
    const room = MAX_LINE_CHARS - this.pending.length;
    if (text.length > room) {
      this.pending += text.slice(0, room);
      this.overflowed = true;
    } else {
      this.pending += text;
    }
  }

  private flushLine(): void {
    const line = this.overflowed ? `${this.pending}…` : this.pending;
    this.pending = '';
    this.overflowed = false;
    this.emit(line);
  }
}

/** Keeps the last `limit` characters' worth of whole lines. */
class Tail {
  private readonly lines: string[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  add(line: string): void {
    this.lines.push(line);
    this.size += line.length + 1;
    while (this.size > this.limit && this.lines.length > 1) {
      this.size -= (this.lines.shift()?.length ?? 0) + 1;
    }
  }

  text(): string {
    return this.lines.join('\n');
  }
}

/**
 * Runs `cmd` in a process group of its own (so everything it starts can be killed with it), streams
 * its output line by line, and settles only once the process has exited and its pipes are closed:
 * no zombie, no orphan, whatever the outcome. A non-zero exit is not an error here: the caller
 * reads `code` and `stderrTail` and decides what failed.
 */
export async function runProcess(cmd: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const { signal, timeoutMs, onStdoutLine, onStderrLine } = options;
  const grace = options.killGraceMs ?? DEFAULT_GRACE_MS;
  if (signal?.aborted) throw signal.reason;
  const wrapper = options.dieWithParent ? await findParentDeathWrapper() : null;
  if (signal?.aborted) throw signal.reason;
  // setpriv sets the signal and then execs the command: same pid, same process group.
  const [file, argv] = wrapped(wrapper, cmd, args, options.niceness, options.memoryLimitMb);

  return new Promise<RunResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(file, argv, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ['ignore', onStdoutLine ? 'pipe' : 'ignore', 'pipe'],
      });
    } catch (error) {
      reject(error);
      return;
    }
    const pid = child.pid;
    let endDrop: () => void = () => undefined;
    if (pid !== undefined && options.niceness) {
      lowerSessionPriority(child, options.niceness);
      offerToOomKiller(pid);
      endDrop = dropWhenLong(pid, false, () => child.exitCode === null && child.signalCode === null);
    }
    const tail = new Tail(options.stderrTailBytes ?? DEFAULT_TAIL_BYTES);
    let stopReason: { error: unknown } | undefined;
    let spawnError: Error | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let limitTimer: NodeJS.Timeout | undefined;

    if (pid !== undefined) trackGroup(pid);
    if (pid !== undefined) options.onSpawn?.(pid);

    const stop = (error: unknown): void => {
      if (stopReason || pid === undefined) return;
      stopReason = { error };
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pid, 'SIGKILL'), grace);
    };
    const onAbort = (): void => stop(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
      limitTimer = setTimeout(
        () => stop(new ConversionFailure('timeout', `The conversion took longer than the limit of ${formatSeconds(timeoutMs)}.`)),
        timeoutMs,
      );
    }

    const stderrLines = new LineSplitter((line) => {
      tail.add(line);
      onStderrLine?.(line);
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => stderrLines.push(chunk));
    if (onStdoutLine && child.stdout) {
      const stdoutLines = new LineSplitter(onStdoutLine);
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => stdoutLines.push(chunk));
      child.stdout.on('end', () => stdoutLines.end());
    }
    child.stderr?.on('end', () => stderrLines.end());

    child.on('error', (error) => {
      spawnError = error;
    });
    child.on('exit', () => {
      // Before its pid can be another process's.
      endDrop();
      // The leader is gone; anything it left in its group goes too (the group id cannot be reused
      // while members remain, so this cannot hit a stranger).
      if (pid !== undefined && stopReason) killGroup(pid, 'SIGKILL');
    });
    // 'close' fires after 'exit' and after stdio has closed: the process is reaped and no more
    // output can arrive. ('error' without a process, e.g. ENOENT, is followed by 'close' too.)
    child.on('close', (code, exitSignal) => {
      if (pid !== undefined) untrackGroup(pid);
      clearTimeout(killTimer);
      clearTimeout(limitTimer);
      signal?.removeEventListener('abort', onAbort);
      const cannotExec = execFailure(cmd, code, tail.text());
      if (stopReason) reject(stopReason.error);
      else if (spawnError) reject(spawnError);
      else if (cannotExec) reject(cannotExec);
      else resolve({ code, signal: exitSignal, stderrTail: tail.text() });
    });
  });
}


/** The last non-empty lines of a stderr tail, for an error message people can read. */
export function lastLines(text: string, count = 3): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .slice(-count)
    .join(' | ');
}
