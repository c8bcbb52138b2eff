/** AccountStore, FailureCounter and the authenticator on them, against a real redis-server. */
import { expect } from 'chai';
import { PasswordAuthenticator, hashPassword } from '../../src/auth/index.js';
import { hashDigest } from '../../src/auth/credential-cache.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/core/errors.js';
import type { StoreConfig } from '../../src/store/index.js';
import { storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 'acc:';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('store: accounts and failed logins (real redis-server)', function () {
  const cfg = (url: string): StoreConfig =>
    storeTestConfig(url, { keyPrefix: PREFIX, credentials: { windowMs: 600, cooldownMs: 400 } });
  const lab = useRedisStore('store-accounts', cfg);

  beforeEach(() => lab.raw.flushdb());

  describe('accounts', () => {
    it('create, get, list; a second create conflicts', async () => {
      await lab.store.accounts.create({
        name: 'carol',
        passwordHash: '$scrypt$c',
        donator: true,
        createdAt: 1700000000123,
      });
      await lab.store.accounts.create({ name: 'alice', passwordHash: '$scrypt$a', donator: false, createdAt: 5 });
      expect(await lab.raw.hgetall(PREFIX + 'a:carol')).to.deep.equal({ h: '$scrypt$c', d: '1', c: '1700000000123' });
      expect(await lab.raw.smembers(PREFIX + 'accounts')).to.have.members(['alice', 'carol']);
      expect(await lab.store.accounts.get('carol')).to.deep.equal({
        name: 'carol',
        passwordHash: '$scrypt$c',
        donator: true,
        createdAt: 1700000000123,
      });
      expect(await lab.store.accounts.get('nobody')).to.equal(undefined);
      expect((await lab.store.accounts.list()).map((a) => a.name)).to.deep.equal(['alice', 'carol']);
      expect(
        await rejection(lab.store.accounts.create({ name: 'carol', passwordHash: 'x', donator: false, createdAt: 0 })),
      ).to.be.instanceOf(ConflictError);
      expect((await lab.store.accounts.get('carol'))!.passwordHash).to.equal('$scrypt$c');
    });

    it('refuses names that cannot be a Basic-auth user', async () => {
      for (const name of ['', 'a:b', 'with space', 'x'.repeat(65)]) {
        expect(
          await rejection(lab.store.accounts.create({ name, passwordHash: 'h', donator: false, createdAt: 0 })),
          name,
        ).to.be.instanceOf(InvalidInputError);
      }
    });

    it('setPasswordHash and setDonator change one field; unknown accounts are NotFound (and not created)', async () => {
      await lab.store.accounts.create({ name: 'alice', passwordHash: 'old', donator: false, createdAt: 5 });
      await lab.store.accounts.setPasswordHash('alice', 'new');
      await lab.store.accounts.setDonator('alice', true);
      expect(await lab.store.accounts.get('alice')).to.deep.equal({
        name: 'alice',
        passwordHash: 'new',
        donator: true,
        createdAt: 5,
      });
      expect(await rejection(lab.store.accounts.setPasswordHash('ghost', 'h'))).to.be.instanceOf(NotFoundError);
      expect(await rejection(lab.store.accounts.setDonator('ghost', true))).to.be.instanceOf(NotFoundError);
      expect(await lab.raw.exists(PREFIX + 'a:ghost')).to.equal(0);
    });

    it('remove refuses while the account owns hosts, then removes', async () => {
      await lab.store.accounts.create({ name: 'alice', passwordHash: 'h', donator: false, createdAt: 5 });
      await lab.store.hosts.add('a.dyn.example.org', 'alice', 'dynamic');
      await lab.store.hosts.add('b.dyn.example.org', 'alice', 'dynamic');
      expect(await lab.store.accounts.hostCount('alice')).to.equal(2);
      expect(await rejection(lab.store.accounts.remove('alice'))).to.be.instanceOf(ConflictError);
      await lab.store.hosts.remove('a.dyn.example.org');
      expect(await rejection(lab.store.accounts.remove('alice'))).to.be.instanceOf(ConflictError);
      await lab.store.hosts.remove('b.dyn.example.org');
      expect(await lab.store.accounts.hostCount('alice')).to.equal(0);
      await lab.store.accounts.remove('alice');
      expect(await lab.raw.exists(PREFIX + 'a:alice')).to.equal(0);
      expect(await lab.raw.smembers(PREFIX + 'accounts')).to.deep.equal([]);
      expect(await rejection(lab.store.accounts.remove('alice'))).to.be.instanceOf(NotFoundError);
    });
  });

  describe('failure counter', () => {
    it('reaching maxFailures puts the source and the account into cool-down, which expires', async () => {
      const f = lab.store.failures;
      await f.recordFailure('192.0.2.1', 'alice');
      await f.recordFailure('192.0.2.1', 'alice');
      expect(await f.isThrottled('192.0.2.1', 'alice')).to.equal(false);
      expect(await lab.raw.get(PREFIX + 'fi:192.0.2.1')).to.equal('2');
      const ttl = await lab.raw.pttl(PREFIX + 'fi:192.0.2.1');
      expect(ttl).to.be.within(1, 600);
      await f.recordFailure('192.0.2.1', 'alice');
      expect(await f.isThrottled('192.0.2.1', undefined)).to.equal(true);
      expect(await f.isThrottled('198.51.100.1', 'alice')).to.equal(true); // the account, from anywhere
      expect(await f.isThrottled('198.51.100.1', 'bob')).to.equal(false);
      expect(await lab.raw.pttl(PREFIX + 'ti:192.0.2.1')).to.be.within(1, 400);
      await sleep(450);
      expect(await f.isThrottled('192.0.2.1', 'alice')).to.equal(false);
    });

    it('failures spread wider than the window never add up', async () => {
      const f = lab.store.failures;
      await f.recordFailure('192.0.2.2', undefined);
      await f.recordFailure('192.0.2.2', undefined);
      await sleep(650);
      await f.recordFailure('192.0.2.2', undefined);
      expect(await f.isThrottled('192.0.2.2', undefined)).to.equal(false);
      expect(await lab.raw.get(PREFIX + 'fi:192.0.2.2')).to.equal('1');
    });

    it('counts IPv6 sources per /64', async () => {
      const f = lab.store.failures;
      await f.recordFailure('2001:db8:1:2::a', undefined);
      await f.recordFailure('2001:db8:1:2:ffff::b', undefined);
      await f.recordFailure('2001:0db8:0001:0002::c', undefined);
      expect(await f.isThrottled('2001:db8:1:2::1234', undefined)).to.equal(true);
      expect(await f.isThrottled('2001:db8:1:3::1', undefined)).to.equal(false);
    });

    it('getForLogin reads the account and both cool-down markers in one go', async () => {
      await lab.store.accounts.create({ name: 'alice', passwordHash: 'h', donator: true, createdAt: 5 });
      expect(await lab.store.accounts.getForLogin('alice', '192.0.2.1')).to.deep.equal({
        account: { name: 'alice', passwordHash: 'h', donator: true, createdAt: 5 },
        throttled: false,
      });
      await lab.raw.set(PREFIX + 'ta:alice', '1', 'PX', 1000);
      expect((await lab.store.accounts.getForLogin('alice', '192.0.2.1')).throttled).to.equal(true);
      await lab.raw.del(PREFIX + 'ta:alice');
      await lab.raw.set(PREFIX + 'ti:192.0.2.1', '1', 'PX', 1000);
      expect(await lab.store.accounts.getForLogin('ghost', '192.0.2.1')).to.deep.equal({
        account: undefined,
        throttled: true,
      });
    });
  });

  describe('authenticator on the Redis store', () => {
    it('logs in, counts wrong passwords, and throttles past the limit', async () => {
      const cost = { ln: 10, r: 8, p: 1 };
      const passwordHash = await hashPassword('right', cost);
      await lab.store.accounts.create({ name: 'alice', passwordHash, donator: false, createdAt: 1 });
      const auth = new PasswordAuthenticator(
        lab.store.accounts,
        lab.store.failures,
        { cacheTtlMs: 1000, cacheSize: 10 },
        { dummyCost: cost },
      );
      const account = { name: 'alice', donator: false };
      expect(await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')).to.deep.equal({
        ok: true,
        account,
        login: { account, hashDigest: hashDigest(passwordHash) },
      });
      expect((await auth.authenticate({ user: 'alice', password: 'wrong' }, '192.0.2.7')).ok).to.equal(false);
      expect(await auth.authenticate({ user: 'ghost', password: 'x' }, '192.0.2.7')).to.deep.equal({
        ok: false,
        reason: 'unknown-user',
      });
      expect(await lab.raw.exists(PREFIX + 'fa:ghost')).to.equal(0);
      await auth.recordMalformed('192.0.2.7');
      // Three failures from 192.0.2.7: now even the right password is refused from there.
      expect(await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.7')).to.deep.equal({
        ok: false,
        reason: 'throttled',
      });
      expect((await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.1')).ok).to.equal(true);
      await sleep(450);
      expect((await auth.authenticate({ user: 'alice', password: 'right' }, '192.0.2.7')).ok).to.equal(true);
    });
  });
});
