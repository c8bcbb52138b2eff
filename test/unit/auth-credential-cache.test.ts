import { expect } from 'chai';
import { CredentialCache } from '../../src/auth/index.js';

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

  it('misses at once after a password change (the stored hash is part of the key)', () => {
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
    for (const opts of [{ ttlMs: 0, maxEntries: 10 }, { ttlMs: 1000, maxEntries: 0 }]) {
      const cache = new CredentialCache(opts);
      cache.set('alice', 'pw', 'H', alice);
      expect(cache.get('alice', 'pw', 'H')).to.equal(undefined);
      expect(cache.size).to.equal(0);
    }
  });
});
