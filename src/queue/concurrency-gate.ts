/**
 * Lets at most `limit` runs through at once; the others wait in arrival order. A waiter whose
 * signal aborts leaves the line at once, rejecting with the signal's reason, and never runs.
 */
export class ConcurrencyGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`gate limit must be a positive integer, got ${limit}`);
  }

  async run<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    await this.enter(signal);
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  private enter(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.active < this.limit) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal.removeEventListener('abort', onAbort);
        this.active += 1;
        resolve();
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal.reason);
      };
      this.waiting.push(turn);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private leave(): void {
    this.active -= 1;
    this.waiting.shift()?.();
  }
}
