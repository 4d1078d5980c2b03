import { dropWhenLong } from './group.ts';
import { HelperProcess, type HelperOptions } from './helper-process.ts';
import { Supervised, type HelperLifecycle } from './supervisor.ts';

export interface HelperPoolOptions {
  /** For messages and logs, e.g. `engine-host`. */
  name: string;
  /** Helpers at most, each running one task at a time. */
  size: number;
  /** How to start the helper of slot `index` (each may need its own profile directory). */
  helper: (index: number) => HelperOptions | Promise<HelperOptions>;
  /** A helper is replaced after this many tasks (memory that grows, state that piles up). */
  recycleAfter: number;
  /** A helper idle this long is stopped, so its memory comes back; the next task starts one again. */
  idleStopMs?: number;
  /** What a helper gets between being asked to end and SIGTERM, and again before SIGKILL. */
  stopGraceMs?: number;
  /** Told when a helper starts or ends (the daemon's log). */
  onLifecycle?: (event: HelperLifecycle) => void;
  /** `count` idle helpers kept started while `whenBusy` or more work (see keepSpare); unset: start on demand only. */
  spares?: { count: number; whenBusy: number };
  /**
   * A health check: every `everyMs`, each idle helper is sent `request`; one that does not answer
   * within `timeoutMs` (or answers with a failure) is killed and replaced by the next task.
   */
  health?: { request: unknown; everyMs: number; timeoutMs: number };
}

export type { HelperLifecycle } from './supervisor.ts';

export interface PoolTask {
  /** Aborting kills the helper running the task (its whole group); the task rejects with the reason. */
  signal: AbortSignal;
  onEvent?: (event: unknown) => void;
  /**
   * Called once the task has a started helper of its own (one that has settled its last task:
   * HelperProcess `settling`), just before it is sent.
   */
  onStart?: () => void;
  /** A quick-lane task: it may take the warm helpers kept as spares (see HelperPoolOptions.spares). */
  quick?: boolean;
}

export interface PoolStatus {
  size: number;
  running: number;
  busy: number;
  started: number;
  /** Helpers that ended while a task ran (killed at a limit, crashed). */
  lost: number;
}

type Helper = Supervised<HelperProcess>;

interface Slot {
  index: number;
  /** Its helper while it takes work; a retired or dead one is dropped (the next task starts another). */
  helper: Helper | null;
  starting: Promise<Helper> | null;
  busy: boolean;
}

interface Waiter {
  resolve: (slot: Slot) => void;
  reject: (error: unknown) => void;
}

const DEFAULT_STOP_GRACE_MS = 1000;

/**
 * A fixed number of long-running helpers (one generic pool; each helper under the supervisor,
 * supervisor.ts, as Chromium's browser is): the engine host and LibreOffice. Helpers start lazily
 * on the first task that needs one (with a start time limit), run one task each at a time, are
 * replaced after `recycleAfter` tasks, when they die, and when a task is aborted (cancel, time
 * limit: the whole group is killed at once, the others carry on), and stop when idle for long.
 */
export class HelperPool {
  private readonly slots: Slot[];
  private readonly waiters: Waiter[] = [];
  private closed = false;
  private started = 0;
  private lost = 0;
  /** Every helper started and not yet ended (those on their way out too): close() waits for them all. */
  private readonly live = new Set<Helper>();

  private readonly healthTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HelperPoolOptions) {
    this.slots = Array.from({ length: Math.max(1, options.size) }, (_, index) => ({
      index, helper: null, starting: null, busy: false,
    }));
    const health = options.health;
    if (health) {
      this.healthTimer = setInterval(() => void this.checkHealth(health.request, health.timeoutMs), health.everyMs);
      this.healthTimer.unref();
    }
  }

  /** Sends the health request to each idle, started helper; kills those that fail it. */
  async checkHealth(request: unknown, timeoutMs: number): Promise<number> {
    let failed = 0;
    await Promise.all(this.slots.map(async (slot) => {
      const helper = slot.helper;
      // One still settling its last task is checked next time.
      if (slot.busy || !helper?.healthy() || helper.value.settling || this.closed) return;
      slot.busy = true;
      // A check is not a task: it does not bring a recycle nearer.
      const done = helper.hold();
      let timer: NodeJS.Timeout | undefined;
      let healthy = false;
      try {
        await Promise.race([
          helper.value.run(request),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), timeoutMs))),
        ]);
        healthy = true;
      } catch {
        failed += 1;
        // Out of the slot at once: no task may be given to a helper on its way out.
        if (slot.helper === helper) slot.helper = null;
        helper.kill('unhealthy');
      } finally {
        clearTimeout(timer);
        this.release(slot, healthy ? helper : null, done);
      }
    }));
    return failed;
  }

  /** Runs one task on a helper; rejects with the signal's reason when aborted, HelperDied when the helper died. */
  async run(request: unknown, task: PoolTask): Promise<unknown> {
    task.signal.throwIfAborted();
    const slot = await this.acquire(task.signal, task.quick === true);
    let helper: Helper | null = null;
    let done: () => void = () => undefined;
    try {
      helper = await this.settledHelperOf(slot, task.signal);
      task.signal.throwIfAborted();
      done = helper.use();
      task.onStart?.();
      const running = helper;
      const onAbort = () => running.kill();
      task.signal.addEventListener('abort', onAbort, { once: true });
      const endWatch = running.value.niced ? dropWhenLong(running.value.pid, true, () => running.alive) : () => undefined;
      this.keepSpare();
      try {
        return await running.value.run(request, task.onEvent);
      } catch (error) {
        if (task.signal.aborted) throw task.signal.reason;
        throw error;
      } finally {
        endWatch();
        task.signal.removeEventListener('abort', onAbort);
      }
    } finally {
      this.release(slot, helper, done);
    }
  }

  /**
   * With `spares`, starts idle helpers in free slots until that many are up and idle: a task that
   * comes while the others are busy (the workers' quick lane) finds one warm rather than waiting
   * seconds for a start.
   */
  private keepSpare(): void {
    const wanted = this.options.spares?.count ?? 0;
    if (wanted <= 0 || this.closed || this.slots.filter((slot) => slot.busy).length < this.options.spares!.whenBusy) return;
    const idleUp = this.slots.filter((slot) => !slot.busy && (slot.helper?.healthy() || slot.starting)).length;
    const cold = this.slots.filter((slot) => !slot.busy && !slot.helper?.healthy() && !slot.starting);
    // Not marked busy while it starts: a task that comes meanwhile takes the slot and waits for
    // the same start.
    for (const slot of cold.slice(0, Math.max(0, wanted - idleUp))) {
      void this.helperOf(slot).then((helper) => {
        if (!slot.busy) helper.idleFromNow();
      }, () => undefined);
    }
  }

  /** Starts every helper now (a warm start at boot) instead of on first use. */
  async warm(): Promise<void> {
    await Promise.all(this.slots.filter((slot) => !slot.busy).map((slot) => this.helperOf(slot).catch(() => undefined)));
  }

  status(): PoolStatus {
    return {
      size: this.slots.length,
      running: this.slots.filter((slot) => slot.helper?.healthy()).length,
      busy: this.slots.filter((slot) => slot.busy).length,
      started: this.started,
      lost: this.lost,
    };
  }

  /** Stops every helper (a task still running is killed with its helper) and refuses new tasks. */
  async close(graceMs = this.options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.closed = true;
    clearInterval(this.healthTimer);
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error(`${this.options.name} pool is closed`));
    await Promise.all(this.slots.map(async (slot) => {
      const helper = slot.helper ?? (await slot.starting?.catch(() => null)) ?? null;
      slot.helper = null;
      if (helper && slot.busy) helper.kill('closed');
    }));
    // Those on their way out already (recycled, idle) keep their reason; no helper outlives the close.
    await Promise.all([...this.live].map((helper) => helper.stop('closed', graceMs)));
  }

  private acquire(signal: AbortSignal, quick: boolean): Promise<Slot> {
    if (this.closed) return Promise.reject(new Error(`${this.options.name} pool is closed`));
    // A slot whose helper is up first, then one that must start one. While others work, a
    // regular task leaves the spares warm for quick ones and starts a helper of its own.
    const warm = this.slots.filter((slot) => !slot.busy && slot.helper?.healthy());
    const cold = this.slots.find((slot) => !slot.busy && !slot.helper?.healthy() && !slot.starting);
    const spares = this.options.spares;
    const keepWarm = !quick && spares !== undefined && cold !== undefined
      && this.slots.some((slot) => slot.busy) && warm.length <= spares.count;
    // Of the warm ones, one that is not still settling its last task (it would make this one wait).
    const ready = warm.find((slot) => !slot.helper!.value.settling) ?? warm[0];
    const free = (keepWarm ? cold : ready) ?? this.slots.find((slot) => !slot.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (slot) => {
          signal.removeEventListener('abort', onAbort);
          resolve(slot);
        },
        reject,
      };
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * The slot's helper once it has settled its last task (HelperProcess `settling`: LibreOffice
   * closing the document it has answered). The task is sent only then: never to a helper on its
   * way out (one that died or was retired meanwhile is replaced), a cancel while it waits kills
   * no one's work, and its clock, memory watch and events are its own.
   */
  private async settledHelperOf(slot: Slot, signal: AbortSignal): Promise<Helper> {
    let helper = await this.helperOf(slot);
    while (helper.value.settling) {
      await untilAborted(helper.value.settled(), signal);
      if (!helper.healthy()) helper = await this.helperOf(slot);
    }
    return helper;
  }

  private helperOf(slot: Slot): Promise<Helper> {
    if (slot.helper?.healthy()) return Promise.resolve(slot.helper);
    slot.helper = null;
    if (!slot.starting) {
      const { name, recycleAfter, idleStopMs, onLifecycle } = this.options;
      const starting = Promise.resolve(this.options.helper(slot.index)).then((helper) => Supervised.start({
        name, recycleAfter, idleStopMs, onLifecycle,
        startTimeoutMs: helper.startTimeoutMs,
        stopGraceMs: this.options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
        start: async (spawned) => {
          const process = await HelperProcess.start(helper, spawned);
          return {
            value: process, pid: process.pid, exited: process.exited, alive: () => process.alive,
            askToEnd: () => process.askToEnd(), onKill: () => process.noteKilled(),
          };
        },
      })).then((helper) => {
        this.started += 1;
        this.live.add(helper);
        void helper.ended.then(() => {
          this.live.delete(helper);
          // Gone, whatever the way: the next task of this slot starts a new one.
          if (slot.helper === helper) slot.helper = null;
        });
        if (this.closed) {
          void helper.stop('closed');
          throw new Error(`${this.options.name} pool is closed`);
        }
        slot.helper = helper;
        return helper;
      });
      slot.starting = starting;
      void starting.then(() => undefined, () => undefined).finally(() => {
        if (slot.starting === starting) slot.starting = null;
      });
    }
    return slot.starting;
  }

  private release(slot: Slot, helper: Helper | null, done: () => void): void {
    if (helper && !helper.alive) {
      this.lost += 1;
    } else if (helper?.value.wantsReplacing) {
      helper.retire('recycled');
    }
    // The last user of a retired helper stops it; of another, starts its idle time.
    done();
    if (slot.helper && !slot.helper.healthy()) slot.helper = null;
    const next = this.waiters.shift();
    if (next) {
      next.resolve(slot);
      return;
    }
    slot.busy = false;
    // A helper that started for a task that then never used it (aborted meanwhile) idles too.
    slot.helper?.idleFromNow();
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
