/**
 * The Authenticator port on top of the account store and the failure counter:
 * throttled? → refuse without looking at the password; unknown user → a dummy scrypt
 * (the reply takes about as long as for a real account) and count; wrong password →
 * count; else the account. Verified credentials are cached briefly (CredentialCache).
 */
import { randomBytes } from 'node:crypto';
import type { AccountStore, AuthResult, Authenticator, Credentials, FailureCounter } from '../app/ports.js';
import type { Config } from '../config/schema.js';
import type { Account } from '../core/types.js';
import { CredentialCache } from './credential-cache.js';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './password.js';

/**
 * Optional on an AccountStore: the account and the cool-down state in one round trip.
 * The Redis account store has it; any other store falls back to two parallel calls.
 */
export interface LoginLookup {
  getForLogin(name: string, sourceIp: string): Promise<{ account: Account | undefined; throttled: boolean }>;
}

export interface AuthenticatorOptions {
  /** Milliseconds clock for the credential cache. */
  clock?: () => number;
  /** Cost of the dummy hash checked for unknown users: the cost real hashes use. */
  dummyCost?: ScryptCost;
  /** The password check (tests count calls); verifyPassword by default. */
  verify?: (password: string, storedHash: string) => Promise<boolean>;
}

export class PasswordAuthenticator implements Authenticator {
  private readonly cache: CredentialCache;
  private readonly verify: (password: string, storedHash: string) => Promise<boolean>;
  private dummyHash: Promise<string> | undefined;

  constructor(
    private readonly accounts: AccountStore,
    private readonly failures: FailureCounter,
    cfg: Pick<Config['credentials'], 'cacheTtlMs' | 'cacheSize'>,
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.cache = new CredentialCache({ ttlMs: cfg.cacheTtlMs, maxEntries: cfg.cacheSize, clock: options.clock });
    this.verify = options.verify ?? verifyPassword;
  }

  async authenticate(credentials: Credentials, sourceIp: string): Promise<AuthResult> {
    const { user, password } = credentials;
    const { account, throttled } = await this.lookup(user, sourceIp);
    if (throttled) return { ok: false, reason: 'throttled' };

    if (account === undefined) {
      await this.verify(password, await this.dummy());
      // Counted per source only: per-name counters for names that do not exist would let
      // anyone fill Redis, and protect nothing.
      await this.failures.recordFailure(sourceIp, undefined);
      return { ok: false, reason: 'unknown-user' };
    }

    const view = { name: account.name, donator: account.donator };
    // The view always comes from the record just read (donator may have changed).
    if (this.cache.get(user, password, account.passwordHash) !== undefined) return { ok: true, account: view };
    if (!(await this.verify(password, account.passwordHash))) {
      await this.failures.recordFailure(sourceIp, account.name);
      return { ok: false, reason: 'bad-password' };
    }
    this.cache.set(user, password, account.passwordHash, view);
    return { ok: true, account: view };
  }

  async recordMalformed(sourceIp: string): Promise<void> {
    await this.failures.recordFailure(sourceIp, undefined);
  }

  private lookup(user: string, sourceIp: string): Promise<{ account: Account | undefined; throttled: boolean }> {
    const combined = this.accounts as AccountStore & Partial<LoginLookup>;
    if (typeof combined.getForLogin === 'function') return combined.getForLogin(user, sourceIp);
    return Promise.all([this.accounts.get(user), this.failures.isThrottled(sourceIp, user)]).then(
      ([account, throttled]) => ({ account, throttled }),
    );
  }

  private dummy(): Promise<string> {
    // Made once, lazily, from a random password nobody knows.
    this.dummyHash ??= hashPassword(randomBytes(18).toString('base64'), this.options.dummyCost ?? DEFAULT_SCRYPT_COST);
    return this.dummyHash;
  }
}
