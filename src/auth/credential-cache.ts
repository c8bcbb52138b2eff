/**
 * A cache of verified credentials, so a client that updates every few minutes costs one
 * scrypt per TTL (default an hour) rather than one per update. The TTL only bounds how long
 * an entry is kept: it never vouches for a stale password (below). Entries are keyed by a SHA-256 of user and
 * password under a secret prefix that lives only in this process, and remember a SHA-1 digest of the
 * stored hash they were verified against: nothing reversible is kept, and a password change
 * misses at once because the stored hash the caller passes in (or the one Redis holds, for
 * the fast path's guard) no longer matches the digest.
 */
import { hash, randomBytes } from 'node:crypto';
import type { AccountView, VerifiedLogin } from '../app/ports.js';

export interface CredentialCacheOptions {
  ttlMs: number;
  /** Most entries kept; the least recently used goes first. 0 disables the cache. */
  maxEntries: number;
  /** Milliseconds clock (tests inject one). */
  clock?: () => number;
}

interface Entry {
  login: VerifiedLogin;
  expiresAt: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  /** Random per process: the keys mean nothing outside it. */
  private readonly secret = randomBytes(32).toString('base64');
  private readonly clock: () => number;

  constructor(private readonly opts: CredentialCacheOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The account view remembered for exactly these credentials and stored hash, if fresh. */
  get(user: string, password: string, storedHash: string): AccountView | undefined {
    const login = this.recall(user, password);
    return login !== undefined && login.hashDigest === hashDigest(storedHash) ? login.account : undefined;
  }

  /** What these credentials were last verified as (account view, stored-hash digest), if fresh. */
  recall(user: string, password: string): VerifiedLogin | undefined {
    if (!this.enabled()) return undefined;
    const key = this.keyOf(user, password);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.login;
  }

  set(user: string, password: string, storedHash: string, account: AccountView): void {
    if (!this.enabled()) return;
    const key = this.keyOf(user, password);
    this.entries.delete(key);
    const login = { account: { ...account }, hashDigest: hashDigest(storedHash) };
    this.entries.set(key, { login, expiresAt: this.clock() + this.opts.ttlMs });
    while (this.entries.size > this.opts.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  forget(user: string, password: string): void {
    this.entries.delete(this.keyOf(user, password));
  }

  clear(): void {
    this.entries.clear();
  }

  private enabled(): boolean {
    return this.opts.ttlMs > 0 && this.opts.maxEntries > 0;
  }

  /**
   * The opaque key of a credential pair: no password in memory maps. A secret-prefixed
   * SHA-256 rather than an HMAC: the keys are only compared inside this process, and the
   * one-shot hash costs a fifth of an HMAC object on every request.
   */
  keyOf(user: string, password: string): string {
    // Length-prefixed fields: no choice of user and password can collide with another.
    return hash('sha256', `${this.secret}${user.length}:${user}\0${password.length}:${password}`, 'base64');
  }
}

/** SHA-1 hex of a stored password hash: what the cache keeps and Redis's guard recomputes. */
export function hashDigest(storedHash: string): string {
  return hash('sha1', storedHash, 'hex');
}
