/**
 * A bounded map whose entries expire: the least recently used entry goes first when it is
 * full. The verified-credential cache and the token cache are both this.
 */
export interface LruTtlOptions {
  ttlMs: number;
  /** Most entries kept. 0 (or a ttl of 0) disables the map: nothing is kept. */
  maxEntries: number;
  /** Milliseconds clock (tests inject one). */
  clock?: () => number;
}

export class LruTtlMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly clock: () => number;

  constructor(private readonly opts: LruTtlOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value if fresh, marked most recently used. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    if (this.opts.ttlMs <= 0 || this.opts.maxEntries <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.clock() + this.opts.ttlMs });
    while (this.entries.size > this.opts.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
