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
import { LruTtlMap, type LruTtlOptions } from './lru-ttl-map.js';

export type CredentialCacheOptions = LruTtlOptions;

export class CredentialCache {
  private readonly entries: LruTtlMap<VerifiedLogin>;
  /** Random per process: the keys mean nothing outside it. */
  private readonly secret = randomBytes(32).toString('base64');

  constructor(opts: CredentialCacheOptions) {
    this.entries = new LruTtlMap(opts);
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
    return this.entries.get(this.keyOf(user, password));
  }

  set(user: string, password: string, storedHash: string, account: AccountView): void {
    this.entries.set(this.keyOf(user, password), { account: { ...account }, hashDigest: hashDigest(storedHash) });
  }

  forget(user: string, password: string): void {
    this.entries.delete(this.keyOf(user, password));
  }

  clear(): void {
    this.entries.clear();
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
