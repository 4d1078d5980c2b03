/**
 * What every request reads (the maintenance switch, the caller's key by its hash, its account),
 * kept for a second by the process: a request then costs no query for them. Another node's change
 * is seen within that second (the spec's "within a second" for revoked keys and the switch); this
 * process's own writes drop their entries at once.
 */
export class SecondCache {
  private readonly entries = new Map<string, { until: number; value: unknown }>();
  /**
   * Bumped by every drop: a load that started before a drop may carry what the write replaced,
   * and is then answered but not kept.
   */
  private generation = 0;

  constructor(private readonly ttlMs = 1000, private readonly maxEntries = 10_000) {}

  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return structuredClone(hit.value) as T;
    const started = this.generation;
    const value = await load();
    if (started !== this.generation) return value;
    // A full cache starts over rather than growing: a second's worth of keys is all it is for.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { until: now + this.ttlMs, value: structuredClone(value) });
    return value;
  }

  drop(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
