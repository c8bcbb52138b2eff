import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { CredentialCache } from '../../src/auth/index.js';
import { hashDigest } from '../../src/auth/credential-cache.js';

function fakeClock(start = 1_000_000) {
  const clock = { now: start, read: () => clock.now };
  return clock;
}

const alice = { name: 'alice', donator: false };

describe('auth/credential-cache', () => {
  it('hits for the same user, password and stored hash; misses otherwise', () => {
    const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
    expect(cache.get('alice', 'pw', 'H1')).to.equal(undefined);
    cache.set('alice', 'pw', 'H1', alice);
    expect(cache.get('alice', 'pw', 'H1')).to.deep.equal(alice);
    expect(cache.get('alice', 'pw2', 'H1')).to.equal(undefined);
    expect(cache.get('bob', 'pw', 'H1')).to.equal(undefined);
  });

  it('misses at once after a password change (the entry remembers which stored hash it matched)', () => {
    const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
    cache.set('alice', 'old', 'H-old', alice);
    expect(cache.get('alice', 'old', 'H-new')).to.equal(undefined);
    expect(cache.get('alice', 'old', 'H-old')).to.deep.equal(alice);
  });

  it('does not confuse where user ends and password begins', () => {
    const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
    cache.set('ab', 'c', 'H', alice);
    expect(cache.get('a', 'bc', 'H')).to.equal(undefined);
    expect(cache.get('a', 'b\0c', 'H')).to.equal(undefined);
  });

  it('expires entries after the TTL', () => {
    const clock = fakeClock();
    const cache = new CredentialCache({ ttlMs: 1000, maxEntries: 10, clock: clock.read });
    cache.set('alice', 'pw', 'H', alice);
    clock.now += 999;
    expect(cache.get('alice', 'pw', 'H')).to.deep.equal(alice);
    clock.now += 1;
    expect(cache.get('alice', 'pw', 'H')).to.equal(undefined);
    expect(cache.size).to.equal(0);
  });

  it('evicts the least recently used entry beyond maxEntries', () => {
    const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 2 });
    cache.set('a', 'pw', 'H', { name: 'a', donator: false });
    cache.set('b', 'pw', 'H', { name: 'b', donator: false });
    expect(cache.get('a', 'pw', 'H')).to.not.equal(undefined); // a is now the most recent
    cache.set('c', 'pw', 'H', { name: 'c', donator: false });
    expect(cache.size).to.equal(2);
    expect(cache.get('b', 'pw', 'H')).to.equal(undefined);
    expect(cache.get('a', 'pw', 'H')).to.not.equal(undefined);
    expect(cache.get('c', 'pw', 'H')).to.not.equal(undefined);
  });

  it('keeps nothing when disabled (size 0 or TTL 0)', () => {
    for (const opts of [
      { ttlMs: 0, maxEntries: 10 },
      { ttlMs: 1000, maxEntries: 0 },
    ]) {
      const cache = new CredentialCache(opts);
      cache.set('alice', 'pw', 'H', alice);
      expect(cache.get('alice', 'pw', 'H')).to.equal(undefined);
      expect(cache.size).to.equal(0);
    }
  });
  describe('hashDigest', () => {
    it('is the SHA-1 hex of the stored hash (what Redis recomputes with redis.sha1hex)', () => {
      expect(hashDigest('x')).to.equal(createHash('sha1').update('x').digest('hex'));
      expect(hashDigest('x')).to.equal('11f6ad8ec52a2984abaafd7c3b516503785c2072');
      const scrypt = '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA';
      expect(hashDigest(scrypt)).to.equal(createHash('sha1').update(scrypt, 'utf8').digest('hex'));
      expect(hashDigest('H1')).to.not.equal(hashDigest('H2'));
    });
  });

  describe('recall', () => {
    it('returns the account view and the SHA-1 hex of the stored hash the credentials matched', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
      expect(cache.recall('alice', 'pw')).to.equal(undefined);
      cache.set('alice', 'pw', 'H1', alice);
      const login = cache.recall('alice', 'pw');
      expect(login).to.deep.equal({ account: alice, hashDigest: createHash('sha1').update('H1').digest('hex') });
      expect(login!.hashDigest).to.equal(hashDigest('H1'));
      // A copy: changing the caller's object afterwards does not change the entry.
      const mutable = { name: 'bob', donator: false };
      cache.set('bob', 'pw', 'H2', mutable);
      mutable.donator = true;
      expect(cache.recall('bob', 'pw')!.account).to.deep.equal({ name: 'bob', donator: false });
    });

    it('misses for another user or another password (and across the user/password boundary)', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
      cache.set('alice', 'pw', 'H1', alice);
      expect(cache.recall('alice', 'pw2')).to.equal(undefined);
      expect(cache.recall('alice', 'PW')).to.equal(undefined);
      expect(cache.recall('bob', 'pw')).to.equal(undefined);
      expect(cache.recall('alic', 'epw')).to.equal(undefined);
      expect(cache.recall('alice', 'pw')).to.not.equal(undefined);
    });

    it('misses after the TTL (and the entry is dropped)', () => {
      const clock = fakeClock();
      const cache = new CredentialCache({ ttlMs: 1000, maxEntries: 10, clock: clock.read });
      cache.set('alice', 'pw', 'H', alice);
      clock.now += 999;
      expect(cache.recall('alice', 'pw')).to.deep.equal({ account: alice, hashDigest: hashDigest('H') });
      clock.now += 1;
      expect(cache.recall('alice', 'pw')).to.equal(undefined);
      expect(cache.size).to.equal(0);
      // get() agrees: nothing left to hit.
      expect(cache.get('alice', 'pw', 'H')).to.equal(undefined);
    });

    it('misses when the cache is disabled (TTL 0 or size 0)', () => {
      for (const opts of [
        { ttlMs: 0, maxEntries: 10 },
        { ttlMs: 1000, maxEntries: 0 },
      ]) {
        const cache = new CredentialCache(opts);
        cache.set('alice', 'pw', 'H', alice);
        expect(cache.recall('alice', 'pw')).to.equal(undefined);
      }
    });

    it('counts as a use for the LRU order, like get', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 2 });
      cache.set('a', 'pw', 'H', { name: 'a', donator: false });
      cache.set('b', 'pw', 'H', { name: 'b', donator: false });
      expect(cache.recall('a', 'pw')).to.not.equal(undefined); // a is now the most recent
      cache.set('c', 'pw', 'H', { name: 'c', donator: false });
      expect(cache.recall('b', 'pw')).to.equal(undefined);
      expect(cache.recall('a', 'pw')).to.not.equal(undefined);
      expect(cache.recall('c', 'pw')).to.not.equal(undefined);
    });

    it('a set() for the same credentials replaces the view and the digest', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
      cache.set('alice', 'pw', 'H1', alice);
      cache.set('alice', 'pw', 'H2', { name: 'alice', donator: true });
      expect(cache.size).to.equal(1);
      expect(cache.recall('alice', 'pw')).to.deep.equal({
        account: { name: 'alice', donator: true },
        hashDigest: hashDigest('H2'),
      });
    });
  });

  describe('get with another stored hash', () => {
    it('misses, but keeps the entry: a later get with the right hash still hits', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
      cache.set('alice', 'pw', 'H-right', alice);
      expect(cache.get('alice', 'pw', 'H-other')).to.equal(undefined);
      expect(cache.size).to.equal(1);
      expect(cache.recall('alice', 'pw')).to.deep.equal({ account: alice, hashDigest: hashDigest('H-right') });
      expect(cache.get('alice', 'pw', 'H-right')).to.deep.equal(alice);
    });
  });

  describe('keyOf', () => {
    it('depends on user and password, keeps neither in clear, and differs per process secret', () => {
      const cache = new CredentialCache({ ttlMs: 60_000, maxEntries: 10 });
      const key = cache.keyOf('alice', 'secret-password');
      expect(key).to.equal(cache.keyOf('alice', 'secret-password'));
      expect(key).to.not.equal(cache.keyOf('alice', 'secret-passwore'));
      expect(key).to.not.equal(cache.keyOf('alicf', 'secret-password'));
      expect(key).to.not.equal(cache.keyOf('ab', 'c'));
      expect(cache.keyOf('ab', 'c')).to.not.equal(cache.keyOf('a', 'bc'));
      expect(key).to.not.include('secret-password');
      expect(key).to.not.include('alice');
      expect(new CredentialCache({ ttlMs: 60_000, maxEntries: 10 }).keyOf('alice', 'secret-password')).to.not.equal(
        key,
      );
    });
  });
});
