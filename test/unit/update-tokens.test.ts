/** Update tokens, the pure parts: shapes, durations, source blocks, notes; and the token login's matching and cache. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { GuardCheck, TokenGuard, TokenLogin, TokenLookup } from '../../src/app/ports.js';
import { CachedTokenAuthenticator, newToken, newTokenId, tokenHash } from '../../src/auth/index.js';
import {
  looksLikeToken,
  noteProblem,
  parseDuration,
  parseSourceList,
  sourceAllowed,
  TOKEN_ID_PATTERN,
} from '../../src/core/update-tokens.js';

describe('core/update-tokens', () => {
  it('a new token is 32 URL-safe characters (192 random bits); ids are 12 hex digits; both differ each time', () => {
    const tokens = new Set(Array.from({ length: 200 }, newToken));
    expect(tokens.size).to.equal(200);
    for (const t of tokens) expect(looksLikeToken(t), t).to.equal(true);
    expect(Buffer.from([...tokens][0]!, 'base64url')).to.have.length(24);
    for (let i = 0; i < 50; i++) expect(newTokenId()).to.match(TOKEN_ID_PATTERN);
  });

  it('only token-shaped passwords are looked up as tokens', () => {
    for (const p of ['', 'short', 'x'.repeat(31), 'x'.repeat(33), `${'x'.repeat(31)}+`, `${'x'.repeat(31)}=`])
      expect(looksLikeToken(p), p).to.equal(false);
    expect(looksLikeToken(`${'A'.repeat(30)}-_`)).to.equal(true);
  });

  it('the keyed hash is stable, 43 base64url characters, and not a plain SHA-256 of the token', () => {
    const t = newToken();
    expect(tokenHash(t))
      .to.equal(tokenHash(t))
      .and.match(/^[A-Za-z0-9_-]{43}$/);
    expect(tokenHash(t)).to.not.equal(tokenHash(newToken()));
    expect(tokenHash(t)).to.not.equal(createHash('sha256').update(t).digest('base64url'));
  });

  it('durations: s, m, h, d, w; anything else (or zero) is refused', () => {
    expect(parseDuration('90s')).to.equal(90_000);
    expect(parseDuration('45m')).to.equal(2_700_000);
    expect(parseDuration('12h')).to.equal(43_200_000);
    expect(parseDuration('30d')).to.equal(2_592_000_000);
    expect(parseDuration('8w')).to.equal(4_838_400_000);
    for (const bad of ['', '0d', '1y', '1.5h', '-1d', 'd', '10', '1 d', '9999999d'])
      expect(parseDuration(bad), bad).to.equal(undefined);
  });

  it('source blocks: CIDR lists normalised (a bare address is a /32 or /128); bad ones named', () => {
    expect(parseSourceList('192.0.2.0/24, 2001:db8::/48,198.51.100.7,::1')).to.deep.equal({
      from: ['192.0.2.0/24', '2001:db8::/48', '198.51.100.7/32', '::1/128'],
    });
    expect(parseSourceList('192.0.2.0/33')).to.deep.equal({ problem: 'not a CIDR block: "192.0.2.0/33"' });
    expect(parseSourceList(' , ')).to.have.property('problem');
    expect(parseSourceList(Array.from({ length: 17 }, (_, i) => `192.0.2.${i}`).join(','))).to.have.property('problem');
  });

  it('sourceAllowed: anywhere when empty; inside one block; never when a stored block does not parse', () => {
    expect(sourceAllowed([], '203.0.113.9')).to.equal(true);
    expect(sourceAllowed(['192.0.2.0/24', '2001:db8::/48'], '192.0.2.200')).to.equal(true);
    expect(sourceAllowed(['192.0.2.0/24', '2001:db8::/48'], '2001:db8:0:ffff::1')).to.equal(true);
    expect(sourceAllowed(['192.0.2.0/24', '2001:db8::/48'], '192.0.3.1')).to.equal(false);
    expect(sourceAllowed(['192.0.2.0/24', 'garbage'], '192.0.2.1')).to.equal(false);
  });

  it('notes: printable, at most 200 characters', () => {
    expect(noteProblem('router in the hall — äöü')).to.equal(undefined);
    expect(noteProblem('a\nb')).to.equal('no control characters');
    expect(noteProblem('x'.repeat(201))).to.equal('at most 200 characters');
  });
});

describe('auth/token-authenticator', () => {
  const token = newToken();
  const login: TokenLogin = {
    id: '0123456789ab',
    hash: tokenHash(token),
    fqdn: 'home.dyn.example.org',
    account: { name: 'alice', donator: false },
    from: ['192.0.2.0/24'],
  };

  function withStore(): { auth: CachedTokenAuthenticator; finds: string[] } {
    const finds: string[] = [];
    const lookup: TokenLookup = {
      find: async (hash) => {
        finds.push(hash);
        return hash === login.hash ? login : undefined;
      },
      check: async (_guard: TokenGuard): Promise<'ok' | GuardCheck> => 'ok',
    };
    return { auth: new CachedTokenAuthenticator(lookup, { ttlMs: 60_000, maxEntries: 10 }), finds };
  }

  it('a token login for its host (any case, trailing dot) or its account, from inside its blocks', async () => {
    const { auth, finds } = withStore();
    for (const user of ['home.dyn.example.org', 'HOME.dyn.example.org.', 'alice']) {
      expect(await auth.login({ user, password: token }, '192.0.2.9', 'ua'), user).to.equal(login);
    }
    // One lookup: the rest from memory.
    expect(finds).to.deep.equal([login.hash]);
  });

  it('not a token login (the password path decides): another user, outside the blocks, unknown, or not token-shaped', async () => {
    const { auth, finds } = withStore();
    expect(await auth.login({ user: 'bob', password: token }, '192.0.2.9', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'other.dyn.example.org', password: token }, '192.0.2.9', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'alice', password: token }, '198.51.100.1', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'alice', password: newToken() }, '192.0.2.9', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'alice', password: 'a password' }, '192.0.2.9', 'ua')).to.equal(undefined);
    // Each one looked up, as a wrong token is (a failed user or --from check is never answered
    // from memory: docs/security.md, "Update tokens"); never the plain password.
    expect(finds).to.have.length(4);
    expect(finds.slice(0, 3)).to.deep.equal([login.hash, login.hash, login.hash]);
    expect(finds[3]).to.not.equal(login.hash);
  });

  it('kept in memory only once a login passed its user and --from checks', async () => {
    const { auth, finds } = withStore();
    expect(await auth.login({ user: 'alice', password: token }, '198.51.100.1', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'alice', password: token }, '198.51.100.1', 'ua')).to.equal(undefined);
    expect(await auth.login({ user: 'alice', password: token }, '192.0.2.9', 'ua')).to.equal(login);
    expect(await auth.login({ user: 'alice', password: token }, '192.0.2.9', 'ua')).to.equal(login);
    // Cached now, but a request from outside still looks it up.
    expect(await auth.login({ user: 'alice', password: token }, '198.51.100.1', 'ua')).to.equal(undefined);
    expect(finds).to.deep.equal([login.hash, login.hash, login.hash, login.hash]);
  });

  it('forget: the next login looks the token up again', async () => {
    const { auth, finds } = withStore();
    await auth.login({ user: 'alice', password: token }, '192.0.2.9', 'ua');
    auth.forget(login);
    await auth.login({ user: 'alice', password: token }, '192.0.2.9', 'ua');
    expect(finds).to.deep.equal([login.hash, login.hash]);
  });
});
