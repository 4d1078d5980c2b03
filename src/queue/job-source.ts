/**
 * Where the worker pool takes conversion ids from. In-process FIFO today; the seam for a
 * Redis-backed queue when one box is outgrown.
 */
export interface JobSource {
  push(id: string): void;
  /** Removes a queued id (cancel); true when it was still waiting. */
  remove(id: string): boolean;
  /** The next id, or undefined when the queue is empty. */
  take(): string | undefined;
  readonly size: number;
  /** Called whenever an id is pushed, so idle workers wake without polling. */
  onPush(listener: () => void): void;
}

export class MemoryJobSource implements JobSource {
  // A Set keeps insertion order (FIFO) and makes removal O(1).
  private readonly ids = new Set<string>();
  private readonly listeners: (() => void)[] = [];

  push(id: string): void {
    this.ids.add(id);
    for (const listener of this.listeners) listener();
  }

  remove(id: string): boolean {
    return this.ids.delete(id);
  }

  take(): string | undefined {
    const first = this.ids.values().next();
    if (first.done) return undefined;
    this.ids.delete(first.value);
    return first.value;
  }

  get size(): number {
    return this.ids.size;
  }

  onPush(listener: () => void): void {
    this.listeners.push(listener);
  }
}
