import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import { execFailure, findParentDeathWrapper, killGroup, lowerSessionPriority, offerToOomKiller, wrapped } from './group.ts';
import { residentBytes, residentBytesOfTree } from './proc-readings.ts';

/** How to start one helper. */
export interface HelperCommand {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface HelperOptions {
  /** For messages and logs, e.g. `engine-host`. */
  name: string;
  command: HelperCommand;
  /** The helper must say it is ready within this time, or it is killed and the start fails (its supervisor's). */
  startTimeoutMs: number;
  /**
   * Resident memory of the helper and everything it started above which the whole group is
   * killed (read from /proc while a task runs, so Linux only); undefined: no watch.
   */
  memoryLimitBytes?: number;
  /** How often the memory is read while a task runs. */
  memoryPollMs?: number;
  /** The helper starts processes of its own (LibreOffice): its memory is theirs too. */
  measureChildren?: boolean;
  /** Runs at this niceness (group.ts `wrapped`); 0 or unset: the parent's. */
  niceness?: number;
  /** Run once the process has exited, whatever the way (its profile directory removed, say). */
  cleanup?: () => Promise<void>;
  /**
   * How long a helper may take to settle after a result it sent with `settling` (see
   * HelperMessage) before its group is killed; a default of 15 s.
   */
  settleTimeoutMs?: number;
}

/** Why a helper's process ended. */
export type HelperEnd = 'memory' | 'killed' | 'exited';

export interface HelperExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  end: HelperEnd;
  /** The last lines of its stderr, for the log and for telling a heap blow-up from a crash. */
  stderrTail: string;
}

/** A task's helper went away before answering (killed, crashed, out of memory). */
export class HelperDied extends Error {
  constructor(readonly helper: string, readonly exit: HelperExit) {
    super(`${helper} ended (${exit.end}; code ${exit.code ?? '-'}, signal ${exit.signal ?? '-'})`);
    this.name = 'HelperDied';
  }
}

/**
 * A message a helper sends: `ready` once, then per task any number of `event`s and one `result`.
 * A result with `settling` says the helper has work of its own left from the task (LibreOffice
 * closing the document it wrote), which it ends with `settled`: the task is answered at once, and
 * the helper takes no next one before it settles.
 */
export type HelperMessage =
  | { type: 'ready' }
  | { type: 'event'; event: unknown }
  | { type: 'result'; ok: true; value: unknown; settling?: boolean }
  | { type: 'result'; ok: false; error: unknown; settling?: boolean }
  | { type: 'settled' };

/** A task the helper answered with `ok: false`: its `error` is the helper's own description. */
export class HelperTaskError extends Error {
  constructor(readonly error: unknown) {
    super('the helper reported a failure');
    this.name = 'HelperTaskError';
  }
}

const DEFAULT_MEMORY_POLL_MS = 200;
/**
 * A one-page letter's close takes 3-5 ms, a 300,000-row sheet's a third of a second: a helper
 * still closing after this long is stuck, and a new one serves the next task sooner.
 */
const DEFAULT_SETTLE_TIMEOUT_MS = 15_000;
const STDERR_TAIL_CHARS = 16 * 1024;

interface Task {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  onEvent: (event: unknown) => void;
}

/**
 * One long-running helper process, run under a supervisor (supervisor.ts: its start time limit,
 * stop and kill): its own process group (everything it starts dies with it),
 * dies with its parent (setpriv --pdeathsig, as ffmpeg), one task at a time. Requests are JSON
 * lines on its stdin; it answers with JSON lines on file descriptor 3, so that whatever its
 * libraries print on stdout or stderr cannot be taken for an answer. Memory is watched while a
 * task runs; over the limit the whole group is killed and the task fails with HelperDied.
 */
export class HelperProcess {
  private readonly child: ChildProcess;
  readonly pid: number;
  private task: Task | null = null;
  private stderrTail = '';
  private end: HelperEnd = 'exited';
  private exitInfo: HelperExit | null = null;
  private memoryTimer: NodeJS.Timeout | undefined;
  /** The most resident memory seen during the last task (0 where it is not read). */
  private peakBytes = 0;
  /** While the helper finishes the work its last result left (HelperMessage `settling`). */
  private settlement: { settled: Promise<void>; done: () => void; timer: NodeJS.Timeout } | null = null;
  /** Settles when the process has exited and its pipes are closed. */
  readonly exited: Promise<HelperExit>;

  /** Runs at a lower priority than the daemon (its session's niceness is the engines'). */
  get niced(): boolean {
    return (this.options.niceness ?? 0) > 0;
  }

  private constructor(child: ChildProcess, private readonly options: HelperOptions) {
    this.child = child;
    this.pid = child.pid!;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    const answers = createInterface({ input: child.stdio[3] as Readable, crlfDelay: Infinity });
    answers.on('line', (line) => this.onLine(line));
    // A pipe that fails, or a helper that goes away (writing to its closed stdin: EPIPE), must not
    // become an uncaught error in the daemon: the helper is done, and its 'close' tells the rest.
    const broken = () => this.kill();
    (child.stdin as Writable).on('error', () => undefined);
    child.stderr!.on('error', broken);
    (child.stdio[3] as Readable).on('error', broken);
    answers.on('error', broken);
    child.on('error', broken);
    this.exited = new Promise<HelperExit>((resolve) => {
      child.once('close', (code, signal) => {
        // Anything it left in its group goes too (the group id cannot be reused while members remain).
        killGroup(this.pid, 'SIGKILL');
        this.stopWatchingMemory();
        const cannotExec = execFailure(options.command.command, code, this.stderrTail);
        const exit: HelperExit = { code, signal, end: this.end, stderrTail: cannotExec ? cannotExec.message : this.stderrTail.trim() };
        this.exitInfo = exit;
        this.failTask(new HelperDied(options.name, exit));
        this.endSettlement();
        void (options.cleanup?.() ?? Promise.resolve()).catch(() => undefined).then(() => resolve(exit));
      });
    });
  }

  /**
   * Starts the helper and resolves once it said it is ready; rejects if it ends before. `spawned`
   * learns its group at once: waiting for the ready has no time limit of its own.
   */
  static async start(options: HelperOptions, spawned: (pid: number) => void = () => undefined): Promise<HelperProcess> {
    const wrapper = await findParentDeathWrapper();
    const [file, argv] = wrapped(wrapper, options.command.command, options.command.args, options.niceness);
    const child = spawn(file, argv, {
      cwd: options.command.cwd,
      env: options.command.env,
      detached: true,
      stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
    });
    if (child.pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      await options.cleanup?.().catch(() => undefined);
      throw error;
    }
    spawned(child.pid);
    lowerSessionPriority(child, options.niceness ?? 0);
    offerToOomKiller(child.pid);
    const helper = new HelperProcess(child, options);
    await helper.ready();
    return helper;
  }

  private ready(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.task = {
        resolve: () => resolve(),
        reject: (error) => {
          reject(error instanceof HelperDied ? new Error(`${this.options.name} did not start: ${error.exit.stderrTail || error.message}`) : error);
        },
        onEvent: () => undefined,
      };
    });
  }

  private onLine(line: string): void {
    let message: HelperMessage;
    try {
      message = JSON.parse(line) as HelperMessage;
    } catch {
      return; // not ours: the protocol is one JSON object per line
    }
    if (message.type === 'settled') {
      this.endSettlement();
      return;
    }
    const task = this.task;
    if (!task) return;
    if (message.type === 'event') {
      task.onEvent(message.event);
      return;
    }
    this.task = null;
    this.stopWatchingMemory();
    if (message.type === 'result' && message.settling === true) this.startSettlement();
    if (message.type === 'ready') task.resolve(undefined);
    else if (message.ok) task.resolve(message.value);
    else task.reject(new HelperTaskError(message.error));
  }

  /** The result said the helper has work left: no next request until it settles, within its time. */
  private startSettlement(): void {
    if (this.settlement || this.exitInfo) return;
    let done = (): void => undefined;
    const settled = new Promise<void>((resolve) => (done = resolve));
    // A helper stuck in its own clean-up would hold its slot for good: it is killed instead, and
    // the task waiting for it goes to a new one.
    const timer = setTimeout(() => this.kill('killed'), this.options.settleTimeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS);
    timer.unref();
    this.settlement = { settled, done, timer };
  }

  private endSettlement(): void {
    const settlement = this.settlement;
    if (!settlement) return;
    this.settlement = null;
    clearTimeout(settlement.timer);
    settlement.done();
  }

  private failTask(error: unknown): void {
    const task = this.task;
    this.task = null;
    task?.reject(error);
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  get busy(): boolean {
    return this.task !== null;
  }

  /**
   * Whether it is still finishing its last task's own work (HelperMessage `settling`): it takes
   * no request before `settled()`.
   */
  get settling(): boolean {
    return this.settlement !== null;
  }

  /** Resolves once it has settled, or has exited (then it takes no more requests). */
  settled(): Promise<void> {
    return this.settlement?.settled ?? Promise.resolve();
  }

  /** Sends one request; resolves with the helper's answer, rejects with HelperTaskError or HelperDied. */
  run(request: unknown, onEvent: (event: unknown) => void = () => undefined): Promise<unknown> {
    if (this.exitInfo) return Promise.reject(new HelperDied(this.options.name, this.exitInfo));
    if (this.task) return Promise.reject(new Error(`${this.options.name} is busy`));
    if (this.settlement) return Promise.reject(new Error(`${this.options.name} is still settling its last task`));
    const answer = new Promise<unknown>((resolve, reject) => {
      this.task = { resolve, reject, onEvent };
    });
    this.watchMemory();
    (this.child.stdin as Writable).write(`${JSON.stringify(request)}\n`);
    return answer;
  }

  /**
   * A helper whose last task took more than half its memory limit: it is better replaced (a
   * heap that grew stays grown, and the next task, another tenant's, would start from there).
   */
  get wantsReplacing(): boolean {
    const limit = this.options.memoryLimitBytes;
    return limit !== undefined && this.peakBytes > limit / 2;
  }

  private watchMemory(): void {
    const limit = this.options.memoryLimitBytes;
    this.peakBytes = 0;
    if (limit === undefined || process.platform !== 'linux') return;
    const measure = this.options.measureChildren ? residentBytesOfTree : residentBytes;
    const check = () => {
      const bytes = measure(this.pid);
      this.peakBytes = Math.max(this.peakBytes, bytes);
      if (bytes > limit && this.task && this.alive) this.kill('memory');
    };
    this.memoryTimer = setInterval(check, this.options.memoryPollMs ?? DEFAULT_MEMORY_POLL_MS);
    this.memoryTimer.unref();
  }

  private stopWatchingMemory(): void {
    clearInterval(this.memoryTimer);
    this.memoryTimer = undefined;
  }

  /** SIGKILLs the whole group at once; a task running fails with HelperDied. */
  kill(end: HelperEnd = 'killed'): void {
    if (!this.alive) return;
    this.noteKilled(end);
    killGroup(this.pid, 'SIGKILL');
  }

  /** Its group is about to be killed (by its supervisor): its exit says so. */
  noteKilled(end: HelperEnd = 'killed'): void {
    if (this.alive) this.end = end;
  }

  /** The polite first step of a stop: its stdin closes, which the helpers take as the end. */
  askToEnd(): void {
    (this.child.stdin as Writable).end();
  }
}
