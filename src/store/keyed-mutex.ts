/**
 * Serializes async critical sections per key (an account): the checks and the insert of a
 * submission (idempotency, limits, credit reservation) must not interleave with another
 * submission of the same account, or 50 concurrent duplicates would all pass the checks.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, section: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(section, section);
    const tail = current.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await current;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
