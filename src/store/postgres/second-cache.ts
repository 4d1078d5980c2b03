/**
 * What requests read again and again, kept for a second by the process: a request then costs no
 * query for it. PostgresStore keeps two: what every request reads (the maintenance switch, the
 * caller's key by its hash, its account), and conversions that have ended. Another node's change
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

  constructor(
    private readonly ttlMs = 1000,
    private readonly maxEntries = 10_000,
    /** What a caller gets of a kept value, so that changing it changes nothing kept (a whole copy unless told). */
    private readonly copy: <T>(value: T) => T = structuredClone,
  ) {}

  /**
   * The value for `key`, loaded when none is kept. `keepUntil` may shorten how long a loaded
   * value is kept (to a time of its own, or not at all with one already past).
   */
  async get<T>(key: string, load: () => Promise<T>, keepUntil?: (value: T) => number): Promise<T> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return this.copy(hit.value) as T;
    const started = this.generation;
    const value = await load();
    if (started !== this.generation) return value;
    const until = Math.min(now + this.ttlMs, keepUntil ? keepUntil(value) : Infinity);
    if (!(until > now)) return value;
    // A full cache starts over rather than growing: a second's worth of keys is all it is for.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { until, value: this.copy(value) });
    return value;
  }

  /**
   * The value kept for `key` while it may still be trusted, as kept (no copy: never to be
   * changed); undefined when none is (`get` would load it).
   */
  peek<T>(key: string): Readonly<T> | undefined {
    const hit = this.entries.get(key);
    return hit && hit.until > Date.now() ? (hit.value as T) : undefined;
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
