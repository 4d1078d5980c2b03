import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';

/**
 * What every child the engines start shares, short-lived (ffmpeg) or long-running (the engine
 * host): a process group of its own, registered here so the parent can take the whole group
 * down, and a parent-death signal so that even a kill -9 of the parent leaves none behind.
 */

/** Process-group ids of every child still running, so the parent can take them down when it exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' runs on process.exit(), on a normal end and after an uncaught exception; handlers must be
  // synchronous, and process.kill is. A daemon that handles SIGTERM/SIGINT should call
  // killAllChildren() (or process.exit) from its handler: Node emits no 'exit' for a fatal signal.
  process.on('exit', () => killAllChildren());
}

/** Registers a child's group (its pid, as it was started detached). */
export function trackGroup(pgid: number): void {
  installExitHook();
  liveGroups.add(pgid);
}

export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** SIGKILLs the process group of every live child. For shutdown paths; safe to call repeatedly. */
export function killAllChildren(): void {
  for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
}

/** Pids (= process-group ids) of children that have not exited yet. */
export function liveChildPids(): number[] {
  return [...liveGroups];
}

export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** `setpriv` paths tried; util-linux puts it in /usr/bin (merged /usr) or /bin. */
const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv'];
let parentDeathWrapper: Promise<string | null> | undefined;

/**
 * The setpriv that can set a parent-death signal, found once: util-linux before 2.33 has no
 * --pdeathsig, and asking it to exec a command would fail every run. `--help` after the option
 * exits 0 only where the option parsed. A probe that could not run at all (no process slot, no
 * memory) says nothing about setpriv: it is not remembered, and the next run asks again.
 */
export function findParentDeathWrapper(): Promise<string | null> {
  if (parentDeathWrapper) return parentDeathWrapper;
  if (process.platform !== 'linux') return (parentDeathWrapper = Promise.resolve(null));
  const path = SETPRIV_PATHS.find((candidate) => existsSync(candidate));
  if (!path) return (parentDeathWrapper = Promise.resolve(null));
  const found = new Promise<string | null>((resolve, reject) => {
    let probe: ChildProcess;
    try {
      probe = spawn(path, ['--pdeathsig', 'KILL', '--help'], { stdio: 'ignore' });
    } catch (error) {
      reject(error);
      return;
    }
    probe.on('error', reject);
    probe.on('close', (code) => resolve(code === 0 ? path : null));
  });
  parentDeathWrapper = found;
  // Unremembered, and the run goes on without the wrapper.
  return found.catch(() => {
    if (parentDeathWrapper === found) parentDeathWrapper = undefined;
    return null;
  });
}

/** coreutils' `nice` paths tried. */
const NICE_PATHS = ['/usr/bin/nice', '/bin/nice'];
let niceBinary: string | null | undefined;

function findNice(): string | null {
  if (niceBinary === undefined) niceBinary = process.platform === 'win32' ? null : NICE_PATHS.find((candidate) => existsSync(candidate)) ?? null;
  return niceBinary;
}

/**
 * `cmd args` as run through the wrapper (same pid, same group: setpriv execs the command), and
 * with `niceness` through `nice`, which sets it before the command starts, so that every thread
 * the command makes has it (a setpriority on Linux reaches one thread only). Engines run niced:
 * when they and the daemon want the same cores, the daemon's event loop goes first.
 */
export function wrapped(wrapper: string | null, cmd: string, args: readonly string[], niceness = 0, memoryLimitMb?: number): [string, string[]] {
  const limiter = memoryLimitMb !== undefined ? findPrlimit() : null;
  const [limitedFile, limitedArgv] = limiter
    ? [limiter, [`--as=${Math.floor(memoryLimitMb! * 1024 * 1024)}`, '--', cmd, ...args]]
    : [cmd, [...args]];
  const nice = niceness > 0 ? findNice() : null;
  const [file, argv] = nice ? [nice, ['-n', String(niceness), limitedFile, ...limitedArgv]] : [limitedFile, limitedArgv];
  return wrapper ? [wrapper, ['--pdeathsig', 'KILL', '--', file, ...argv]] : [file, argv];
}

/** util-linux's `prlimit` paths tried. */
const PRLIMIT_PATHS = ['/usr/bin/prlimit', '/bin/prlimit'];
let prlimitBinary: string | null | undefined;

/**
 * prlimit sets the address-space limit (RLIMIT_AS) and execs the command: an allocation past it
 * fails inside the engine, which then exits with its own out-of-memory message. Where there is no
 * prlimit (not Linux), the process runs without one; the OOM killer still takes it first.
 */
export function findPrlimit(): string | null {
  if (prlimitBinary === undefined) prlimitBinary = process.platform === 'linux' ? PRLIMIT_PATHS.find((candidate) => existsSync(candidate)) ?? null : null;
  return prlimitBinary;
}

/** The niceness engines run with (a lower priority than the daemon's). */
export const ENGINE_NICENESS = 10;
/** The niceness of an engine's work once it has run for LONG_RUN_MS: below every fresh one. */
export const LONG_RUN_NICENESS = 19;
/** How long a piece of engine work runs at ENGINE_NICENESS before it drops to LONG_RUN_NICENESS. */
export const LONG_RUN_MS = 2000;

/** The variables an engine process gets of the daemon's environment. */
const ENGINE_ENV = /^(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|LC_[A-Z_]+|TZ|TMPDIR|TEMP|TMP|XDG_RUNTIME_DIR)$/;

/**
 * The environment of a process that reads users' files (the engine host, LibreOffice): what
 * locale, time zone and temp directory need, and `extra`. Not the daemon's own settings
 * (CONVD_* holds the metrics token) nor NODE_OPTIONS (an --inspect there would open a debugger in
 * every engine host).
 */
export function engineEnvironment(extra: Record<string, string> = {}, from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(from)) if (value !== undefined && ENGINE_ENV.test(name)) env[name] = value;
  return { ...env, ...extra };
}

/**
 * Makes the kernel's OOM killer take this engine process before anything else (the daemon above
 * all) when the machine runs out of memory. Raising the score needs no privilege.
 */
export function offerToOomKiller(pid: number): void {
  if (process.platform !== 'linux') return;
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, '1000');
  } catch {
    // Gone already, or /proc is read-only here.
  }
}

/**
 * The kernel lets a process without CAP_SYS_ADMIN change one autogroup's nice value per tenth of
 * a second, machine-wide; a write inside that window fails with EAGAIN. Tried again this often.
 */
const AUTOGROUP_RETRY_MS = 110;
/** Given up after this many tries (the child runs on with only its threads niced). */
const AUTOGROUP_TRIES = 50;

/**
 * Gives a child that leads a session of its own (every engine process: `detached` is setsid) a
 * lower priority as a whole. With Linux's autogroup scheduling (the default on desktops and many
 * servers), each session is a scheduling group, and a nice value counts only inside its group:
 * a niced engine in its own session still got as much CPU as the whole daemon (measured: the
 * daemon's event loop p99 went from 16 to 79 ms beside four busy engine hosts). The group's own
 * nice value is in /proc/<pid>/autogroup; raising it needs no privilege, but an unprivileged
 * daemon may change one group's per tenth of a second, machine-wide: of several engines started
 * together, all but the first were left at the daemon's priority. A refused write is tried again
 * until it lands or the child has exited (while it has not been reaped, its pid is no one else's).
 * Where there is no such file (autogroup off, not Linux) the per-thread nice set by `wrapped` is
 * what counts.
 */
export function lowerSessionPriority(child: ChildProcess, niceness: number): void {
  if (child.pid === undefined) return;
  lowerSessionOf(child.pid, niceness, () => child.exitCode === null && child.signalCode === null);
}

/** Retries still to come, by pid: a newer value for a session replaces one still waiting. */
const pendingChanges = new Map<number, NodeJS.Timeout>();

/**
 * lowerSessionPriority for any engine process (one the daemon started, or one that an engine's
 * own process started): `stillThere` says, before each try, that `pid` is still that process.
 * The last value asked for a session is the one that lands: a retry of an older one is dropped.
 */
export function lowerSessionOf(pid: number, niceness: number, stillThere: () => boolean): void {
  if (process.platform !== 'linux' || niceness <= 0) return;
  clearTimeout(pendingChanges.get(pid));
  pendingChanges.delete(pid);
  const attempt = (triesLeft: number): void => {
    pendingChanges.delete(pid);
    if (!stillThere()) return;
    try {
      writeFileSync(`/proc/${pid}/autogroup`, String(niceness));
    } catch (error) {
      // Anything else: no autogroup here, or the process is already gone.
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN' && triesLeft > 1) pendingChanges.set(pid, setTimeout(() => attempt(triesLeft - 1), AUTOGROUP_RETRY_MS).unref());
    }
  };
  attempt(AUTOGROUP_TRIES);
}

/**
 * Drops the session of `pid` (an engine process that leads one) to LONG_RUN_NICENESS once the
 * work it was given has run LONG_RUN_MS: a feedback queue of two levels. Each conversion's first
 * seconds get a fresh engine's share; work that runs on (to its limit, often a hostile file's)
 * takes what the fresh ones leave, so a small conversion started beside a dozen long ones ends in
 * about its own time. The returned function ends the watch; with `restore` (a pooled process that
 * will take other work) it puts the session back at ENGINE_NICENESS. An autogroup's niceness may
 * be raised and lowered again within 0-19 without privilege.
 */
export function dropWhenLong(pid: number, restore: boolean, stillThere: () => boolean): () => void {
  if (process.platform !== 'linux') return () => undefined;
  let dropped = false;
  const timer = setTimeout(() => {
    dropped = true;
    lowerSessionOf(pid, LONG_RUN_NICENESS, stillThere);
  }, LONG_RUN_MS);
  timer.unref();
  return () => {
    clearTimeout(timer);
    if (dropped && restore) lowerSessionOf(pid, ENGINE_NICENESS, stillThere);
  };
}

/**
 * What setpriv or nice say when they cannot exec the command (exit 127 for a missing file, 126
 * for one it may not run): the error spawn gives for the command itself, so a missing binary
 * reads the same with the wrappers as without them.
 */
export function execFailure(cmd: string, code: number | null, stderr: string): NodeJS.ErrnoException | null {
  if ((code !== 127 && code !== 126) || !/^(?:\S*\/)?(setpriv: failed to execute|prlimit: failed to execute|nice: )/m.test(stderr)) return null;
  const errno = code === 127 ? 'ENOENT' : 'EACCES';
  const error: NodeJS.ErrnoException = new Error(`spawn ${cmd} ${errno}`);
  error.code = errno;
  error.syscall = `spawn ${cmd}`;
  error.path = cmd;
  return error;
}
