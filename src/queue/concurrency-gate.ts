/**
 * Lets at most `limit` runs through at once; the others wait in arrival order. `quick` runs (the
 * workers' quick lane) may also use `extra` places beyond the limit, which other runs never take,
 * and go before them in the line. A waiter whose signal aborts leaves the line at once, rejecting
 * with the signal's reason, and never runs.
 */
export class ConcurrencyGate {
  private active = 0;
  private readonly waiting: { quick: boolean; turn: () => void }[] = [];

  constructor(readonly limit: number, readonly extra = 0) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`gate limit must be a positive integer, got ${limit}`);
  }

  async run<T>(signal: AbortSignal, work: () => Promise<T>, quick = false): Promise<T> {
    await this.enter(signal, quick);
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  private room(quick: boolean): boolean {
    return this.active < this.limit + (quick ? this.extra : 0);
  }

  private enter(signal: AbortSignal, quick: boolean): Promise<void> {
    signal.throwIfAborted();
    if (this.room(quick)) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        quick,
        turn: () => {
          signal.removeEventListener('abort', onAbort);
          this.active += 1;
          resolve();
        },
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal.reason);
      };
      const firstRegular = this.waiting.findIndex((other) => !other.quick);
      this.waiting.splice(quick && firstRegular >= 0 ? firstRegular : this.waiting.length, 0, waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private leave(): void {
    this.active -= 1;
    const next = this.waiting[0];
    if (next && this.room(next.quick)) {
      this.waiting.shift();
      next.turn();
    }
  }
}
