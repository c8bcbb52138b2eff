/**
 * The Authenticator port on top of the account store and the failure counter:
 * throttled? → refuse without looking at the password; unknown user → a dummy scrypt
 * (the reply takes about as long as for a real account) and count; wrong password →
 * count; else the account. Verified credentials are cached (CredentialCache, an hour by default).
 * The account and the cool-down markers come from one LoginLookup read; a request that
 * needs a password check reads the markers once more when its hash slot is free, so a
 * burst of concurrent guesses cannot outrun the cool-down (docs/protocol.md, "Clients that misbehave").
 */
import { randomBytes } from 'node:crypto';
import type {
  AccountView,
  AuthResult,
  Authenticator,
  Credentials,
  FailureCounter,
  LoginLookup,
  VerifiedLogin,
} from '../app/ports.js';
import type { Config } from '../config/schema.js';
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry.js';
import { CredentialCache, hashDigest } from './credential-cache.js';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './password.js';

/** scrypt runs at once per process unless told otherwise (each takes 32 MiB and ~50 ms of a core). */
export const DEFAULT_PARALLEL_HASHES = 2;

/**
 * Marks credentials (one object per request) whose cache lookup was counted: a request that
 * the fast path recalls and then hands to authenticate (two names, an mx lookup) counts once.
 * A property, not a WeakSet: see CONNECTION in http/server.ts on weak maps and young objects.
 */
const LOOKUP_COUNTED = Symbol('ddns-bridge credential lookup counted');

/** What a password check in a hash slot found. */
type Verdict = 'right' | 'wrong' | 'throttled';

export interface AuthenticatorOptions {
  /** Milliseconds clock for the credential cache. */
  clock?: () => number;
  /** Cost of the dummy hash checked for unknown users: the cost real hashes use. */
  dummyCost?: ScryptCost;
  /** The password check (tests count calls); verifyPassword by default. */
  verify?: (password: string, storedHash: string) => Promise<boolean>;
  /** At most this many password checks at once (default DEFAULT_PARALLEL_HASHES). */
  parallelHashes?: number;
  /** Credential cache hits and misses; password checks waiting for a hash slot. */
  telemetry?: Telemetry;
}

function verified(account: AccountView, storedHash: string): AuthResult {
  return { ok: true, account, login: { account, hashDigest: hashDigest(storedHash) } };
}

export class PasswordAuthenticator implements Authenticator {
  private readonly cache: CredentialCache;
  private readonly verify: (password: string, storedHash: string) => Promise<boolean>;
  private dummyHash: Promise<string> | undefined;
  private readonly verifying = new Map<string, Promise<Verdict>>();
  private hashing = 0;
  private readonly hashQueue: Array<() => void> = [];
  private readonly maxParallelHashes: number;
  private readonly telemetry: Telemetry;

  constructor(
    private readonly logins: LoginLookup,
    private readonly failures: FailureCounter,
    cfg: Pick<Config['credentials'], 'cacheTtlMs' | 'cacheSize'>,
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.cache = new CredentialCache({ ttlMs: cfg.cacheTtlMs, maxEntries: cfg.cacheSize, clock: options.clock });
    this.verify = options.verify ?? verifyPassword;
    this.maxParallelHashes = Math.max(1, Math.floor(options.parallelHashes ?? DEFAULT_PARALLEL_HASHES));
    this.telemetry = options.telemetry ?? NO_TELEMETRY;
    this.telemetry.sample('password_checks_waiting', {}, () => this.hashQueue.length);
  }

  /** A hit: the cache vouched for the credentials; a miss: they need a password check. Once per request. */
  private countLookup(credentials: Credentials, hit: boolean): void {
    const marked = credentials as Credentials & { [LOOKUP_COUNTED]?: true };
    if (marked[LOOKUP_COUNTED]) return;
    marked[LOOKUP_COUNTED] = true;
    this.telemetry.credentialCache(hit);
  }

  async authenticate(
    credentials: Credentials,
    sourceIp: string,
    proceed: Promise<boolean> = Promise.resolve(true),
  ): Promise<AuthResult> {
    const { user, password } = credentials;
    // Read while the caller's earlier check is still in flight: one round trip for both.
    const lookup = this.logins.getForLogin(user, sourceIp);
    lookup.catch(() => undefined); // awaited below, or dropped when refused
    if (!(await proceed)) return { ok: false, reason: 'refused' };
    const { account, throttled } = await lookup;
    if (throttled) return { ok: false, reason: 'throttled' };

    if (account === undefined) {
      this.countLookup(credentials, false); // a (dummy) password check
      // The account is gone: its cached login would only send the next request through the
      // fast path's guard (a wasted round trip) until the entry expires.
      this.cache.forget(user, password);
      // Counted per source only: per-name counters for names that do not exist would let
      // anyone fill Redis, and protect nothing.
      const dummyCheck = async () => {
        await this.verify(password, await this.dummy());
        return false;
      };
      const verdict = await this.checkInSlot(user, sourceIp, dummyCheck, undefined);
      return { ok: false, reason: verdict === 'throttled' ? 'throttled' : 'unknown-user' };
    }

    const view = { name: account.name, donator: account.donator };
    // The view always comes from the record just read (donator may have changed).
    const cached = this.cache.get(user, password, account.passwordHash);
    this.countLookup(credentials, cached !== undefined);
    if (cached !== undefined) {
      // Remember the new view too, or recall() would keep offering the stale one.
      if (cached.donator !== view.donator) this.cache.set(user, password, account.passwordHash, view);
      return verified(view, account.passwordHash);
    }
    const { verdict, joined } = this.verifyShared(user, password, sourceIp, account.name, account.passwordHash);
    const outcome = await verdict;
    if (outcome === 'throttled') return { ok: false, reason: 'throttled' };
    if (outcome === 'wrong') {
      // Credentials that stopped working (a password change) leave the cache at once.
      this.cache.forget(user, password);
      // The request that ran the check counted already; each one that joined it counts too.
      if (joined) await this.failures.recordFailure(sourceIp, account.name);
      return { ok: false, reason: 'bad-password' };
    }
    this.cache.set(user, password, account.passwordHash, view);
    return verified(view, account.passwordHash);
  }

  /**
   * One scrypt per distinct credential at a time: concurrent requests with the same (not yet
   * cached) credentials from the same source share it — a router updating 20 names at once
   * costs one hash. The source is part of the key because the check re-reads that source's
   * cool-down: a request from another address must not ride on it.
   */
  private verifyShared(
    user: string,
    password: string,
    sourceIp: string,
    accountName: string,
    storedHash: string,
  ): { verdict: Promise<Verdict>; joined: boolean } {
    const key = `${this.cache.keyOf(user, password)}\0${storedHash}\0${sourceIp}`;
    const pending = this.verifying.get(key);
    if (pending) return { verdict: pending, joined: true };
    const verdict = this.checkInSlot(user, sourceIp, () => this.verify(password, storedHash), accountName).finally(() =>
      this.verifying.delete(key),
    );
    this.verifying.set(key, verdict);
    return { verdict, joined: false };
  }

  /**
   * A password check in a hash slot. The cool-down is read again first: checks queued ahead
   * of this one may have started it while this request waited, and then no hash runs. A
   * failure is counted before the slot is passed on, so the next holder's read sees it.
   */
  private checkInSlot(
    user: string,
    sourceIp: string,
    check: () => Promise<boolean>,
    countAs: string | undefined,
  ): Promise<Verdict> {
    return this.limited(async () => {
      if ((await this.logins.getForLogin(user, sourceIp)).throttled) return 'throttled';
      if (await check()) return 'right';
      await this.failures.recordFailure(sourceIp, countAs);
      return 'wrong';
    });
  }

  /**
   * At most maxParallelHashes scrypt runs at once (each takes 32 MiB and ~50 ms of a core):
   * bounds memory under a burst of cold logins and slows a guessing flood, not the cache hits.
   */
  private async limited<T>(work: () => Promise<T>): Promise<T> {
    while (this.hashing >= this.maxParallelHashes) await new Promise<void>((r) => this.hashQueue.push(r));
    this.hashing++;
    try {
      return await work();
    } finally {
      this.hashing--;
      this.hashQueue.shift()?.();
    }
  }

  recall(credentials: Credentials): VerifiedLogin | undefined {
    // Counted once the admission's guard passed (recalledAndAdmitted); a miss by authenticate.
    return this.cache.recall(credentials.user, credentials.password);
  }

  recalledAndAdmitted(credentials: Credentials): void {
    this.countLookup(credentials, true);
  }

  async recordMalformed(sourceIp: string): Promise<void> {
    await this.failures.recordFailure(sourceIp, undefined);
  }

  private dummy(): Promise<string> {
    // Made once, lazily, from a random password nobody knows.
    this.dummyHash ??= hashPassword(randomBytes(18).toString('base64'), this.options.dummyCost ?? DEFAULT_SCRYPT_COST);
    return this.dummyHash;
  }
}
