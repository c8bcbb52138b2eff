import { expect } from 'chai';
import type { AccountStore, AuthResult, FailureCounter, LoginLookup } from '../../src/app/ports.js';
import { PasswordAuthenticator, hashPassword, verifyPassword } from '../../src/auth/index.js';
import { hashDigest } from '../../src/auth/credential-cache.js';
import type { Account } from '../../src/core/types.js';

const FAST = { ln: 10, r: 8, p: 1 };
const CFG = { cacheTtlMs: 60_000, cacheSize: 100 };

/** In-memory AccountStore + LoginLookup; cool-downs come from the fake failure counter. */
class FakeAccounts implements AccountStore, LoginLookup {
  readonly byName = new Map<string, Account>();
  gets = 0;
  constructor(private readonly failures?: FakeFailures) {}
  async getForLogin(name: string, sourceIp: string) {
    return { account: await this.get(name), throttled: (await this.failures?.isThrottled(sourceIp, name)) ?? false };
  }
  async get(name: string) {
    this.gets++;
    const a = this.byName.get(name);
    return a && { ...a };
  }
  async create(a: Account) {
    this.byName.set(a.name, { ...a });
  }
  async setPasswordHash(name: string, passwordHash: string) {
    this.byName.get(name)!.passwordHash = passwordHash;
  }
  async setDonator(name: string, donator: boolean) {
    this.byName.get(name)!.donator = donator;
  }
  async remove(name: string) {
    this.byName.delete(name);
  }
  async list() {
    return [...this.byName.values()];
  }
}

class FakeFailures implements FailureCounter {
  readonly throttledSources = new Set<string>();
  readonly throttledAccounts = new Set<string>();
  readonly recorded: [string, string | undefined][] = [];
  readonly checks: [string, string | undefined][] = [];
  async isThrottled(sourceIp: string, account: string | undefined) {
    this.checks.push([sourceIp, account]);
    return this.throttledSources.has(sourceIp) || (account !== undefined && this.throttledAccounts.has(account));
  }
  async recordFailure(sourceIp: string, account: string | undefined) {
    this.recorded.push([sourceIp, account]);
  }
}

/** Counts like the Redis strike script: the maxFailures-th failure starts the cool-down. */
class CountingFailures extends FakeFailures {
  private readonly counts = new Map<string, number>();
  constructor(private readonly maxFailures: number) {
    super();
  }
  override async recordFailure(sourceIp: string, account: string | undefined) {
    await super.recordFailure(sourceIp, account);
    if (this.strike(`source ${sourceIp}`)) this.throttledSources.add(sourceIp);
    if (account !== undefined && this.strike(`account ${account}`)) this.throttledAccounts.add(account);
  }
  private strike(key: string): boolean {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    return n >= this.maxFailures;
  }
}

async function setup(opts: { clock?: () => number } = {}) {
  const failures = new FakeFailures();
  const accounts = new FakeAccounts(failures);
  await accounts.create({
    name: 'alice',
    passwordHash: await hashPassword('right', FAST),
    donator: false,
    createdAt: 1,
  });
  const verified: string[] = [];
  const auth = new PasswordAuthenticator(accounts, failures, CFG, {
    clock: opts.clock,
    dummyCost: FAST,
    verify: (password, stored) => {
      verified.push(stored);
      return verifyPassword(password, stored);
    },
  });
  return { accounts, failures, auth, verified };
}

/** An AuthResult without its login (the tests below are about the verdict and the view). */
function verdict(r: AuthResult): unknown {
  return r.ok ? { ok: true, account: r.account } : r;
}

describe('auth/authenticator', () => {
  it('accepts the right password and returns the account view; counts nothing', async () => {
    const { auth, failures, verified } = await setup();
    const r = await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    const account = { name: 'alice', donator: false };
    // The login the admission's guard checks again: the digest of the hash it was verified against.
    const stored = verified[0]!;
    expect(r).to.deep.equal({ ok: true, account, login: { account, hashDigest: hashDigest(stored) } });
    expect(failures.recorded).to.deep.equal([]);
    // Two reads of the cool-down: the login lookup, and again once the hash slot is ours
    // (failures recorded while this request waited for it must stop the check).
    expect(failures.checks).to.deep.equal([
      ['192.0.2.1', 'alice'],
      ['192.0.2.1', 'alice'],
    ]);
    expect(verified).to.have.length(1);
  });

  it('bad password: counted for the source and the account', async () => {
    const { auth, failures } = await setup();
    const r = await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.1');
    expect(r).to.deep.equal({ ok: false, reason: 'bad-password' });
    expect(failures.recorded).to.deep.equal([['192.0.2.1', 'alice']]);
  });

  it('unknown user: a dummy scrypt check still runs, counted for the source only', async () => {
    const { auth, failures, verified, accounts } = await setup();
    const r = await auth.authenticate({ user: 'mallory', password: 'x' }, '192.0.2.9');
    expect(r).to.deep.equal({ ok: false, reason: 'unknown-user' });
    expect(verified).to.have.length(1);
    expect(verified[0]).to.match(/^\$scrypt\$ln=10,r=8,p=1\$/);
    expect(verified[0]).to.not.equal(accounts.byName.get('alice')!.passwordHash);
    expect(failures.recorded).to.deep.equal([['192.0.2.9', undefined]]);
  });

  it('throttled source or account: refused before any password check, nothing counted', async () => {
    const { auth, failures, verified } = await setup();
    failures.throttledSources.add('192.0.2.1');
    expect(await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')).to.deep.equal({
      ok: false,
      reason: 'throttled',
    });
    failures.throttledSources.clear();
    failures.throttledAccounts.add('alice');
    expect(await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.2')).to.deep.equal({
      ok: false,
      reason: 'throttled',
    });
    expect(verified).to.deep.equal([]);
    expect(failures.recorded).to.deep.equal([]);
  });

  it('caches verified credentials: no second scrypt; the view stays current', async () => {
    const { auth, verified, accounts } = await setup();
    await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    await accounts.setDonator('alice', true);
    const again = await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    expect(verdict(again)).to.deep.equal({ ok: true, account: { name: 'alice', donator: true } });
    expect(verified).to.have.length(1);
    // The record is read every time: lookup + the re-read in the hash slot, then the lookup
    // alone for the cached request (no password check, so no second read).
    expect(accounts.gets).to.equal(3);
  });

  it('a password change takes effect at once despite the cache', async () => {
    const { auth, accounts } = await setup();
    expect((await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')).ok).to.equal(true);
    await accounts.setPasswordHash('alice', await hashPassword('new', FAST));
    expect(await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')).to.deep.equal({
      ok: false,
      reason: 'bad-password',
    });
    expect((await auth.authenticate({ user: 'alice', password: 'new' }, '192.0.2.1')).ok).to.equal(true);
  });

  it('a wrong password is never cached; a cached entry expires with the TTL', async () => {
    let now = 5_000_000;
    const { auth, verified } = await setup({ clock: () => now });
    await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.1');
    await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.1');
    expect(verified).to.have.length(2);
    await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    now += CFG.cacheTtlMs - 1;
    await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    expect(verified).to.have.length(3);
    now += 1;
    await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1');
    expect(verified).to.have.length(4);
  });

  it("refused by the caller's gate: no verification, nothing counted (the lookup was already under way)", async () => {
    const { auth, failures, verified } = await setup();
    const r = await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.1', Promise.resolve(false));
    expect(r).to.deep.equal({ ok: false, reason: 'refused' });
    expect(verified).to.deep.equal([]);
    expect(failures.recorded).to.deep.equal([]);
  });

  it('concurrent requests with the same uncached credentials share one password check', async () => {
    const { auth, verified } = await setup();
    const results = await Promise.all(
      Array.from({ length: 10 }, () => auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')),
    );
    expect(results.every((r) => r.ok)).to.equal(true);
    expect(verified).to.have.length(1);
  });

  /** Six distinct cold logins at once; the most password checks that ran at the same time. */
  async function peakOfColdLogins(options: { parallelHashes?: number } = {}): Promise<number> {
    const failures = new FakeFailures();
    const accounts = new FakeAccounts(failures);
    for (let i = 0; i < 6; i++)
      await accounts.create({ name: `u${i}`, passwordHash: `h${i}`, donator: false, createdAt: 1 });
    let running = 0;
    let peak = 0;
    const auth = new PasswordAuthenticator(accounts, failures, CFG, {
      dummyCost: FAST,
      ...options,
      verify: async () => {
        peak = Math.max(peak, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return true;
      },
    });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => auth.authenticate({ user: `u${i}`, password: 'pw' }, '192.0.2.1')),
    );
    expect(results.every((r) => r.ok)).to.equal(true);
    return peak;
  }

  it('no more than two password checks run at once (memory under a burst of cold logins)', async () => {
    expect(await peakOfColdLogins()).to.equal(2);
  });

  it('parallelHashes sets that bound (serve gives one per worker when every CPU has a worker)', async () => {
    expect(await peakOfColdLogins({ parallelHashes: 1 })).to.equal(1);
    expect(await peakOfColdLogins({ parallelHashes: 3 })).to.equal(3);
  });

  it('recordMalformed counts a failure for the source', async () => {
    const { auth, failures } = await setup();
    await auth.recordMalformed('2001:db8::1');
    expect(failures.recorded).to.deep.equal([['2001:db8::1', undefined]]);
  });

  it('decides on the login lookup: account and cool-down from a single read (read again only before a password check)', async () => {
    const { failures } = await setup();
    const calls: [string, string][] = [];
    const hash = await hashPassword('pw', FAST);
    const accounts = Object.assign(new FakeAccounts(), {
      async getForLogin(name: string, sourceIp: string) {
        calls.push([name, sourceIp]);
        return {
          account: { name, passwordHash: hash, donator: true, createdAt: 1 },
          throttled: sourceIp === '198.51.100.7',
        };
      },
    });
    const auth = new PasswordAuthenticator(accounts, failures, CFG, { dummyCost: FAST });
    expect(verdict(await auth.authenticate({ user: 'carol', password: 'pw' }, '192.0.2.1'))).to.deep.equal({
      ok: true,
      account: { name: 'carol', donator: true },
    });
    expect(await auth.authenticate({ user: 'carol', password: 'pw' }, '198.51.100.7')).to.deep.equal({
      ok: false,
      reason: 'throttled',
    });
    // Two reads for the first login: the lookup, and the cool-down re-read once the hash
    // slot is ours (the cool-down may start while a request queues for scrypt). The
    // throttled login is refused on its one lookup, before any slot or password check.
    expect(calls).to.deep.equal([
      ['carol', '192.0.2.1'],
      ['carol', '192.0.2.1'],
      ['carol', '198.51.100.7'],
    ]);
    expect(accounts.gets).to.equal(0);
    expect(failures.checks).to.deep.equal([]);
  });
  describe('credential guessing under concurrency (docs/protocol.md, "Clients that misbehave": past the threshold, no password check)', () => {
    const MAX_FAILURES = 3;
    const SOURCE = '203.0.113.66';

    async function guessing() {
      const failures = new CountingFailures(MAX_FAILURES);
      const accounts = new FakeAccounts(failures);
      await accounts.create({
        name: 'alice',
        passwordHash: await hashPassword('right', FAST),
        donator: false,
        createdAt: 1,
      });
      const checked: string[] = []; // the passwords that reached a password check
      const auth = new PasswordAuthenticator(accounts, failures, CFG, {
        dummyCost: FAST,
        verify: (password, stored) => {
          checked.push(password);
          return verifyPassword(password, stored);
        },
      });
      return { auth, failures, checked };
    }

    it('a burst of wrong guesses, then the right password from the same source: the right one is throttled, never checked', async () => {
      const { auth, failures, checked } = await guessing();
      const passwords = [...Array.from({ length: 8 }, (_, i) => `guess-${i}`), 'right'];
      // All nine pass the login lookup before any failure is counted; they queue for a hash slot.
      const results = await Promise.all(
        passwords.map((password) => auth.authenticate({ user: 'alice', password }, SOURCE)),
      );
      expect(results[8]).to.deep.equal({ ok: false, reason: 'throttled' });
      expect(checked).to.not.include('right');
      // Checks stop at the cool-down: 3 failures start it, and a 4th guess was already
      // hashing in the second slot when the 3rd was counted.
      expect(checked).to.have.length(MAX_FAILURES + 1);
      expect(results.filter((r) => !r.ok && r.reason === 'bad-password')).to.have.length(MAX_FAILURES + 1);
      expect(results.filter((r) => !r.ok && r.reason === 'throttled')).to.have.length(9 - (MAX_FAILURES + 1));
      expect(failures.recorded).to.have.length(MAX_FAILURES + 1);
      expect(failures.throttledSources.has(SOURCE)).to.equal(true);
      expect(auth.recall({ user: 'alice', password: 'right' })).to.equal(undefined);
    });

    it('unknown users too: once the source is in cool-down, queued guesses get no dummy check', async () => {
      const { auth, failures, checked } = await guessing();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => auth.authenticate({ user: `nobody${i}`, password: 'x' }, SOURCE)),
      );
      expect(results.filter((r) => !r.ok && r.reason === 'unknown-user')).to.have.length(MAX_FAILURES + 1);
      expect(results.filter((r) => !r.ok && r.reason === 'throttled')).to.have.length(8 - (MAX_FAILURES + 1));
      expect(checked).to.have.length(MAX_FAILURES + 1);
      // per source only, as for a single unknown user
      expect(failures.recorded).to.deep.equal(Array.from({ length: MAX_FAILURES + 1 }, () => [SOURCE, undefined]));
    });

    it('identical wrong logins share one check, and each still counts as a failure', async () => {
      const { auth, failures, checked } = await guessing();
      const results = await Promise.all(
        Array.from({ length: 2 }, () => auth.authenticate({ user: 'alice', password: 'wrong' }, SOURCE)),
      );
      expect(results).to.deep.equal([
        { ok: false, reason: 'bad-password' },
        { ok: false, reason: 'bad-password' },
      ]);
      expect(checked).to.deep.equal(['wrong']);
      expect(failures.recorded).to.deep.equal([
        [SOURCE, 'alice'],
        [SOURCE, 'alice'],
      ]);
    });

    it("identical logins share a check only from the same source: a source in cool-down cannot ride on another's check", async () => {
      const failures = new FakeFailures();
      const accounts = new FakeAccounts(failures);
      await accounts.create({
        name: 'alice',
        passwordHash: await hashPassword('right', FAST),
        donator: false,
        createdAt: 1,
      });
      await accounts.create({
        name: 'bob',
        passwordHash: await hashPassword('bob-pw', FAST),
        donator: false,
        createdAt: 1,
      });
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const checked: string[] = [];
      const auth = new PasswordAuthenticator(accounts, failures, CFG, {
        dummyCost: FAST,
        parallelHashes: 1,
        verify: async (password, stored) => {
          checked.push(password);
          await gate;
          return verifyPassword(password, stored);
        },
      });
      const right = { user: 'alice', password: 'right' };
      const bob = auth.authenticate({ user: 'bob', password: 'bob-pw' }, '192.0.2.1'); // holds the one slot
      const fromA = auth.authenticate(right, '198.51.100.1');
      const fromA2 = auth.authenticate(right, '198.51.100.1'); // joins A's check
      const fromB = auth.authenticate(right, '198.51.100.2');
      await new Promise((r) => setImmediate(r)); // every lookup done: A, A2 and B wait for the slot
      failures.throttledSources.add('198.51.100.1'); // A's cool-down starts meanwhile
      open();
      expect(await fromA).to.deep.equal({ ok: false, reason: 'throttled' });
      expect(await fromA2).to.deep.equal({ ok: false, reason: 'throttled' });
      expect(verdict(await fromB)).to.deep.equal({ ok: true, account: { name: 'alice', donator: false } });
      expect((await bob).ok).to.equal(true);
      expect(checked).to.deep.equal(['bob-pw', 'right']); // B's own check; A's stopped before hashing
      expect(failures.recorded).to.deep.equal([]);
    });
  });

  describe('recall', () => {
    const right = { user: 'alice', password: 'right' };

    it('is undefined before any authenticate', async () => {
      const { auth, accounts } = await setup();
      expect(auth.recall(right)).to.equal(undefined);
      expect(accounts.gets).to.equal(0); // no I/O
    });

    it('after a successful authenticate: the account view and the digest of the stored hash', async () => {
      const { auth, accounts } = await setup();
      expect((await auth.authenticate(right, '192.0.2.1')).ok).to.equal(true);
      const stored = accounts.byName.get('alice')!.passwordHash;
      const gets = accounts.gets;
      expect(auth.recall(right)).to.deep.equal({
        account: { name: 'alice', donator: false },
        hashDigest: hashDigest(stored),
      });
      expect(accounts.gets).to.equal(gets); // from memory
      // only these exact credentials
      expect(auth.recall({ user: 'alice', password: 'right ' })).to.equal(undefined);
      expect(auth.recall({ user: 'Alice', password: 'right' })).to.equal(undefined);
    });

    it('stays undefined after a bad password', async () => {
      const { auth } = await setup();
      expect((await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.1')).ok).to.equal(false);
      expect(auth.recall({ user: 'alice', password: 'wrong' })).to.equal(undefined);
      expect(auth.recall(right)).to.equal(undefined);
    });

    it('stays undefined after an unknown user', async () => {
      const { auth } = await setup();
      expect(await auth.authenticate({ user: 'mallory', password: 'x' }, '192.0.2.1')).to.deep.equal({
        ok: false,
        reason: 'unknown-user',
      });
      expect(auth.recall({ user: 'mallory', password: 'x' })).to.equal(undefined);
    });

    it('is forgotten once the account is gone (else every request would try the fast path first until it expires)', async () => {
      const { auth, accounts } = await setup();
      expect((await auth.authenticate(right, '192.0.2.1')).ok).to.equal(true);
      expect(auth.recall(right)).to.not.equal(undefined);
      accounts.byName.delete('alice');
      expect(await auth.authenticate(right, '192.0.2.1')).to.deep.equal({ ok: false, reason: 'unknown-user' });
      expect(auth.recall(right)).to.equal(undefined);
    });

    it('stays undefined after a throttled attempt, even with the right password', async () => {
      const { auth, failures } = await setup();
      failures.throttledSources.add('192.0.2.1');
      expect(await auth.authenticate(right, '192.0.2.1')).to.deep.equal({ ok: false, reason: 'throttled' });
      expect(auth.recall(right)).to.equal(undefined);
      failures.throttledSources.clear();
      failures.throttledAccounts.add('alice');
      expect(await auth.authenticate(right, '192.0.2.2')).to.deep.equal({ ok: false, reason: 'throttled' });
      expect(auth.recall(right)).to.equal(undefined);
    });

    it("stays undefined when the caller's gate refused", async () => {
      const { auth } = await setup();
      expect(await auth.authenticate(right, '192.0.2.1', Promise.resolve(false))).to.deep.equal({
        ok: false,
        reason: 'refused',
      });
      expect(auth.recall(right)).to.equal(undefined);
    });

    it('is refreshed to donator: true when a later successful authenticate sees the account became a donator (and back)', async () => {
      const { auth, accounts, verified } = await setup();
      await auth.authenticate(right, '192.0.2.1');
      const digest = hashDigest(accounts.byName.get('alice')!.passwordHash);
      expect(auth.recall(right)!.account.donator).to.equal(false);
      await accounts.setDonator('alice', true);
      // recall alone does no I/O: it still offers the view as verified
      expect(auth.recall(right)!.account.donator).to.equal(false);
      expect(verdict(await auth.authenticate(right, '192.0.2.1'))).to.deep.equal({
        ok: true,
        account: { name: 'alice', donator: true },
      });
      expect(auth.recall(right)).to.deep.equal({ account: { name: 'alice', donator: true }, hashDigest: digest });
      await accounts.setDonator('alice', false);
      expect((await auth.authenticate(right, '192.0.2.1')).ok).to.equal(true);
      expect(auth.recall(right)).to.deep.equal({ account: { name: 'alice', donator: false }, hashDigest: digest });
      expect(verified).to.have.length(1); // the refreshes came from the cache, no new scrypt
    });

    it("after a password change: the new password recalls the new hash's digest", async () => {
      const { auth, accounts } = await setup();
      await auth.authenticate(right, '192.0.2.1');
      const oldDigest = auth.recall(right)!.hashDigest;
      const newHash = await hashPassword('new', FAST);
      await accounts.setPasswordHash('alice', newHash);
      expect((await auth.authenticate(right, '192.0.2.1')).ok).to.equal(false);
      expect((await auth.authenticate({ user: 'alice', password: 'new' }, '192.0.2.1')).ok).to.equal(true);
      expect(auth.recall({ user: 'alice', password: 'new' })).to.deep.equal({
        account: { name: 'alice', donator: false },
        hashDigest: hashDigest(newHash),
      });
      // whatever the old credentials still recall, it is not the stored hash's digest any more
      // (the admit guard in Redis compares against the stored hash)
      expect(auth.recall(right)?.hashDigest).to.not.equal(hashDigest(newHash));
      expect(oldDigest).to.not.equal(hashDigest(newHash));
    });
  });
});
