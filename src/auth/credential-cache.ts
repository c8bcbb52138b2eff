/**
 * A short-lived cache of verified credentials, so a client that updates every minute costs
 * one scrypt per TTL rather than one per request. Entries are keyed by an HMAC (with a key
 * that lives only in this process) of user, password and the stored hash: nothing
 * reversible is kept, and a password change misses at once because the stored hash the
 * caller passes in is different.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AccountView } from '../app/ports.js';

export interface CredentialCacheOptions {
  ttlMs: number;
  /** Most entries kept; the least recently used goes first. 0 disables the cache. */
  maxEntries: number;
  /** Milliseconds clock (tests inject one). */
  clock?: () => number;
}

interface Entry {
  account: AccountView;
  expiresAt: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private readonly secret = randomBytes(32);
  private readonly clock: () => number;

  constructor(private readonly opts: CredentialCacheOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The account view remembered for exactly these credentials and stored hash, if fresh. */
  get(user: string, password: string, storedHash: string): AccountView | undefined {
    if (!this.enabled()) return undefined;
    const key = this.keyOf(user, password, storedHash);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.account;
  }

  set(user: string, password: string, storedHash: string, account: AccountView): void {
    if (!this.enabled()) return;
    const key = this.keyOf(user, password, storedHash);
    this.entries.delete(key);
    this.entries.set(key, { account: { ...account }, expiresAt: this.clock() + this.opts.ttlMs });
    while (this.entries.size > this.opts.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  private enabled(): boolean {
    return this.opts.ttlMs > 0 && this.opts.maxEntries > 0;
  }

  /** The opaque key of a credential triple (an HMAC under a per-process secret: no password in memory maps). */
  keyOf(user: string, password: string, storedHash: string): string {
    // Length-prefixed fields: no choice of user and password can collide with another.
    return createHmac('sha256', this.secret)
      .update(`${user.length}:${user}\0${password.length}:${password}\0${storedHash}`, 'utf8')
      .digest('base64');
  }
}
