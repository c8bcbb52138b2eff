/**
 * Token logins: a token-shaped password is looked up by its keyed hash (one Redis read, then
 * kept in memory like verified passwords once a login matched its user and source). The
 * login checks themselves (junk block, source cool-down, revoked, expired) are made by the
 * admission in Redis (TokenGuard), so a cached token costs the request nothing extra.
 */
import type { Credentials, GuardCheck, TokenAuthenticator, TokenGuard, TokenLogin, TokenLookup } from '../app/ports.js';
import { normalizeHostname } from '../core/names.js';
import { looksLikeToken, sourceAllowed } from '../core/update-tokens.js';
import { LruTtlMap, type LruTtlOptions } from './lru-ttl-map.js';
import { tokenHash } from './update-token.js';

export class CachedTokenAuthenticator implements TokenAuthenticator {
  /** By token hash: records are immutable; only revocation and expiry matter (checked in Redis). */
  private readonly cache: LruTtlMap<TokenLogin>;

  constructor(
    private readonly tokens: TokenLookup,
    cache: LruTtlOptions,
  ) {
    this.cache = new LruTtlMap(cache);
  }

  async login(
    credentials: Credentials,
    sourceIp: string,
    userAgent: string,
  ): Promise<TokenLogin | 'agent' | 'login' | undefined> {
    if (!looksLikeToken(credentials.password)) return undefined;
    const hash = tokenHash(credentials.password);
    // From memory only when this request passes the user and --from checks: a token used with
    // another user or from outside its range costs the lookup a wrong token costs, so neither
    // tells a live token from a dead one (docs/security.md, "Update tokens").
    const cached = this.cache.get(hash);
    if (cached !== undefined && matches(cached, credentials.user, sourceIp)) return cached;
    const found = await this.tokens.find(hash, sourceIp, userAgent);
    if (found === undefined || found === 'agent' || found === 'login') {
      // Revoked or expired: a cached record must not outlive it.
      if (found === undefined) this.cache.delete(hash);
      return found;
    }
    if (!matches(found, credentials.user, sourceIp)) return undefined;
    this.cache.set(hash, found);
    return found;
  }

  check(guard: TokenGuard): Promise<'ok' | GuardCheck> {
    return this.tokens.check(guard);
  }

  forget(login: TokenLogin): void {
    this.cache.delete(login.hash);
  }
}

/**
 * The user names the token's host or that host's account (routers often have no hostname field), or the token's
 * id (acme-dns clients send a user id beside the key: docs/clients.md, "Certificates (ACME DNS-01)"), or is empty:
 * the token alone (`Authorization: Token`, docs/protocol.md, "deSEC variants"; Basic never yields an empty user).
 * The source lies in its `from`.
 */
function matches(login: TokenLogin, rawUser: string, sourceIp: string): boolean {
  if (rawUser !== '') {
    const user = rawUser.trim();
    if (user !== login.account.name && user !== login.id && normalizeHostname(user) !== login.fqdn) return false;
  }
  return sourceAllowed(login.from, sourceIp);
}
