/** Request parsing: parameters (query + form body), Basic credentials, client address. */
import basicAuth from 'basic-auth';
import { cidrContains, normalizePeer, parseCidr, type Cidr } from '../core/addresses.js';
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';
import type { ParamMap } from '../core/params.js';
import type { Credentials } from '../app/ports.js';

/**
 * Decode `a=b&c=d` leniently: `+` is a space, bad percent escapes stay literal, raw commas
 * and colons are fine. Later values of a name are appended after earlier ones.
 */
export function parseParams(into: Map<string, string[]>, text: string): void {
  if (!text) return;
  for (const [name, value] of new URLSearchParams(text)) {
    const list = into.get(name);
    if (list) list.push(value);
    else into.set(name, [value]);
  }
}

export function paramsOf(query: string, body: string | undefined): ParamMap {
  const map = new Map<string, string[]>();
  parseParams(map, query);
  if (body !== undefined) parseParams(map, body);
  return map;
}

/**
 * `Authorization: Basic <base64(user:pass)>` (basic-auth: scheme case-insensitive, split at
 * the first colon). 'missing' when there is no header, 'malformed' when it cannot be read
 * or names no user.
 */
export function parseBasicAuth(header: string | undefined): Credentials | 'missing' | 'malformed' {
  if (header === undefined || header.trim() === '') return 'missing';
  const parsed = basicAuth.parse(header);
  if (!parsed || parsed.name === '') return 'malformed';
  const { name: user, pass: password } = parsed;
  // Control characters are exactly what this refuses.
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(user) || user.length > 256 || password.length > MAX_PASSWORD_LENGTH) return 'malformed';
  return { user, password };
}

export class ClientAddressResolver {
  private readonly trusted: Cidr[];
  constructor(trustedProxies: readonly string[]) {
    this.trusted = trustedProxies.map((t) => {
      const cidr = parseCidr(t);
      if (!cidr) throw new Error(`invalid trusted proxy ${t}`);
      return cidr;
    });
  }

  private isTrusted(address: string): boolean {
    return this.trusted.some((c) => cidrContains(c, address));
  }

  /**
   * The peer address; when the peer is a trusted proxy, the right-most entry of
   * X-Forwarded-For that is not itself a trusted proxy, or, when every entry is, the
   * right-most one: the client sits inside the trusted network (a LAN host behind the
   * operator's own proxy), and the proxy's address would be published as the client's. The
   * right-most, not the left-most: that is the address the proxy itself saw, while entries
   * further left may have come from the client (an inside host could name another inside
   * host and have its logins and junk counted against it).
   * undefined when the peer address is unknown: there is no address to fall back to.
   */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string | undefined {
    const direct = peer === undefined ? undefined : normalizePeer(withoutZone(peer));
    if (direct === undefined) return undefined;
    if (forwardedFor === undefined || !this.isTrusted(direct)) return direct;
    const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    let nearest: string | undefined;
    for (let i = entries.length - 1; i >= 0; i--) {
      const addr = normalizePeer(withoutZone(stripPort(entries[i]!.trim())));
      if (addr === undefined) return direct; // garbage in the chain: stop believing it
      if (!this.isTrusted(addr)) return addr;
      nearest ??= addr;
    }
    return nearest ?? direct;
  }
}

/** `1.2.3.4:5678` and `[2001:db8::1]:443` → bare address (some proxies append ports). */
function stripPort(entry: string): string {
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(entry);
  if (bracket) return bracket[1]!;
  const v4port = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(entry);
  return v4port ? v4port[1]! : entry;
}

/**
 * `fe80::1%eth0` → `fe80::1`: node reports a link-local peer with its zone, which names our
 * interface, not part of the client's address. (A `myip` with a zone stays unparsable.)
 */
function withoutZone(address: string): string {
  return address.replace(/^([^%]*:[^%]*)%[^%]+$/, '$1');
}
