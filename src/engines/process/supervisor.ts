import { killGroup, trackGroup, untrackGroup } from './group.ts';
import type { HelperExit } from './helper-process.ts';

/** Why a supervised process ended: on purpose (all but `died`), or not. */
export type EndReason = 'recycled' | 'idle' | 'closed' | 'unhealthy' | 'died';

/**
 * Told when a supervised process starts or ends (the daemon's log), and when Chromium's browsers
 * are started without their sandbox from then on (`why` says what the sandboxed start answered).
 */
export type HelperLifecycle =
  | { type: 'started'; helper: string; pid: number; ms: number }
  | { type: 'ended'; helper: string; pid: number; tasks: number; exit: HelperExit; why: EndReason }
  | { type: 'unsandboxed'; helper: string; why: string };

/** A started process as its starter hands it over: what it is, and how to reach its end. */
export interface Running<T> {
  value: T;
  /** Its process group (it was started detached); undefined where it cannot be known: no kill reaches it. */
  pid: number | undefined;
  /** Settles once it has exited, whatever the way, nothing of its group is left and its own clean-up ran. */
  exited: Promise<HelperExit>;
  /** False from the moment it is known to be gone (its pipes closed), which may be before `exited`. */
  alive(): boolean;
  /** The first step of a stop: asks it to end on its own (its stdin closed, the browser closed). */
  askToEnd(): void;
  /** Told just before its group is SIGKILLed, so that its exit can say it was killed. */
  onKill?(): void;
}

export interface SupervisedOptions<T> {
  /** For messages and logs, e.g. `office`. */
  name: string;
  /** Starts it; `spawned` is told its group as soon as there is one, so that a start too slow can be killed. */
  start(spawned: (pid: number) => void): Promise<Running<T>>;
  startTimeoutMs: number;
  /** It retires on this many uses (memory that grows, state that piles up); unset: never. */
  recycleAfter?: number;
  /** Stopped when no one has used it for this long, so its memory comes back; unset: never. */
  idleStopMs?: number;
  /** What it gets between being asked to end and SIGTERM, and again before SIGKILL. */
  stopGraceMs: number;
  onLifecycle?(event: HelperLifecycle): void;
}

/**
 * One long-running process (a helper, a browser) under one contract: a start with a time limit,
 * uses counted towards a recycle, retirement that waits for the last user, a stop that asks first
 * and kills the whole group last, an idle stop, and `started`/`ended` lifecycle events. It never
 * restarts itself: its owner (a pool slot, the warm browser) starts the next one when this one is
 * no longer healthy, so a retired process can still finish the work it holds while the next serves.
 */
export class Supervised<T> {
  readonly value: T;
  readonly pid: number | undefined;
  /** Settles once it has exited and its `ended` event was told. */
  readonly ended: Promise<HelperExit>;
  /** Uses counted towards the recycle (a health check is not one). */
  uses = 0;
  private users = 0;
  /** No new user: retired (recycled, closing) or on its way out. */
  private retired = false;
  /** A stop or kill was begun: no second one. */
  private ending = false;
  /** The first reason given for its end; an end nobody asked for is a death. */
  private why: EndReason | undefined;
  private done = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** When its last use ended (its start before any): what an idle stop counts from. */
  private idleSince = Date.now();
  private readonly stopTimers: NodeJS.Timeout[] = [];

  private constructor(private readonly options: SupervisedOptions<T>, private readonly running: Running<T>, ms: number) {
    this.value = running.value;
    this.pid = running.pid;
    if (this.pid !== undefined) trackGroup(this.pid);
    options.onLifecycle?.({ type: 'started', helper: options.name, pid: this.pid ?? 0, ms });
    this.ended = running.exited.then((exit) => {
      this.done = true;
      this.retired = true;
      clearTimeout(this.idleTimer);
      for (const timer of this.stopTimers) clearTimeout(timer);
      if (this.pid !== undefined) untrackGroup(this.pid);
      options.onLifecycle?.({ type: 'ended', helper: options.name, pid: this.pid ?? 0, tasks: this.uses, exit, why: this.why ?? 'died' });
      return exit;
    });
  }

  /**
   * Starts one and resolves once its starter says it is ready. Not ready within the time limit:
   * its group is killed and the start fails, and one that gets ready later all the same is killed.
   */
  static start<T>(options: SupervisedOptions<T>): Promise<Supervised<T>> {
    const began = performance.now();
    let group: number | undefined;
    let late = false;
    return new Promise<Supervised<T>>((resolve, reject) => {
      const timer = setTimeout(() => {
        late = true;
        if (group !== undefined) killGroup(group, 'SIGKILL');
        reject(new Error(`${options.name} did not start within ${options.startTimeoutMs} ms`));
      }, options.startTimeoutMs);
      const spawned = (pid: number) => {
        group = pid;
        // From now on: the daemon's exit takes it along even if the start never ends.
        trackGroup(pid);
      };
      options.start(spawned).then((running) => {
        clearTimeout(timer);
        if (!late) {
          resolve(new Supervised(options, running, Math.round(performance.now() - began)));
          return;
        }
        running.onKill?.();
        if (running.pid !== undefined) killGroup(running.pid, 'SIGKILL');
        void running.exited.then(() => {
          if (running.pid !== undefined) untrackGroup(running.pid);
        });
      }, (error: unknown) => {
        clearTimeout(timer);
        // A start that failed leaves nothing of its own behind.
        if (group !== undefined) {
          killGroup(group, 'SIGKILL');
          untrackGroup(group);
        }
        reject(error);
      });
    });
  }

  /** Still running (it may be retired: finishing what it holds). */
  get alive(): boolean {
    return !this.done && this.running.alive();
  }

  /** Running and taking new users: neither retired nor on its way out. */
  healthy(): boolean {
    return !this.retired && this.alive;
  }

  /** Users holding it now. */
  get active(): number {
    return this.users;
  }

  /**
   * One use, counted towards the recycle: it retires on its `recycleAfter`th (this user keeps
   * it). Call the returned function when done with it; the last user of a retired one stops it.
   */
  use(): () => void {
    const release = this.holdFor(true);
    this.uses += 1;
    if (this.options.recycleAfter !== undefined && this.uses >= this.options.recycleAfter) this.retire('recycled');
    return release;
  }

  /**
   * A hold that is not a use (a health check): no stop while it lasts, but it brings no recycle
   * nearer and does not put off an idle stop (a check every minute would keep it up for good).
   */
  hold(): () => void {
    return this.holdFor(false);
  }

  private holdFor(counted: boolean): () => void {
    if (!this.healthy()) throw new Error(`${this.options.name} takes no new work`);
    this.users += 1;
    clearTimeout(this.idleTimer);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.users -= 1;
      if (counted) this.idleSince = Date.now();
      if (this.users > 0) return;
      if (this.retired) void this.stop(this.why ?? 'recycled');
      else this.idleFromNow();
    };
  }

  /** No new users from now; it stops once the last one lets go (at once when none holds it). */
  retire(why: EndReason = 'recycled'): void {
    this.why ??= why;
    this.retired = true;
    clearTimeout(this.idleTimer);
    if (this.users === 0) void this.stop(why);
  }

  /**
   * Stopped once `idleStopMs` have passed since its last use ended (or its start) with no one
   * holding it. Called by itself when its last user lets go.
   */
  idleFromNow(): void {
    const after = this.options.idleStopMs;
    if (after === undefined || !this.healthy() || this.users > 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.users === 0 && this.healthy()) void this.stop('idle');
    }, Math.max(0, this.idleSince + after - Date.now()));
    this.idleTimer.unref();
  }

  /** SIGKILLs its whole group at once; whoever holds it finds it dead. */
  kill(why?: EndReason): void {
    // Without a reason it is a death (a task's limit, a stuck browser): a retirement asked just
    // after, while the exit is still on its way, must not relabel it.
    this.why ??= why ?? 'died';
    this.retired = true;
    this.ending = true;
    clearTimeout(this.idleTimer);
    if (!this.alive) return;
    this.running.onKill?.();
    // With no group known there is only the polite way.
    if (this.pid === undefined) this.running.askToEnd();
    else killGroup(this.pid, 'SIGKILL');
  }

  /** Asks it to end, then SIGTERMs its group after `graceMs`, then SIGKILLs it after `graceMs` more. */
  stop(why: EndReason, graceMs = this.options.stopGraceMs): Promise<HelperExit> {
    this.why ??= why;
    this.retired = true;
    clearTimeout(this.idleTimer);
    if (this.ending || !this.alive) return this.ended;
    this.ending = true;
    this.running.askToEnd();
    const pid = this.pid;
    if (pid !== undefined) {
      this.stopTimers.push(
        setTimeout(() => killGroup(pid, 'SIGTERM'), graceMs),
        setTimeout(() => this.kill(), graceMs * 2),
      );
    }
    return this.ended;
  }
}
