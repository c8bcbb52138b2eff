/**
 * What `ddns-bridge check` warns about in `trustedProxies` (docs/security.md, "Trusted proxies").
 * A peer in the list may name any client address in X-Forwarded-For, and the bridge then takes
 * that address for everything a client address decides: so the list should hold proxies only.
 */
import { cidrContains, cidrOverlaps, parseAddress, parseCidr, type Cidr } from '../core/addresses.js';
import type { Config } from './schema.js';

/** The widest block taken for one proxy network: a /24 of IPv4, a /64 of IPv6 (one LAN). */
export const WIDEST_PROXY_BLOCK: Readonly<Record<4 | 6, number>> = Object.freeze({ 4: 24, 6: 64 });

const LOOPBACK = { 4: parseCidr('127.0.0.0/8')!, 6: parseCidr('::1/128')! };

/** What a peer that may set X-Forwarded-For can choose: said in each warning. */
const FORGES =
  'it chooses the address the bridge takes for the client: the one an update publishes, the one ' +
  "an update token's --from must hold, and the one failed logins and junk are counted against " +
  '(it can put other sources in their cool-down)';

/**
 * One line per entry of `trustedProxies` that is wider than WIDEST_PROXY_BLOCK, and per loopback
 * entry while a plain (non-TLS) listener accepts loopback connections (any local process can
 * then connect and forge X-Forwarded-For). Entries are valid here (loadConfig checked them).
 */
export function trustedProxyWarnings(config: Pick<Config, 'trustedProxies' | 'listen'>): string[] {
  const warnings: string[] = [];
  for (const [i, text] of config.trustedProxies.entries()) {
    const cidr = parseCidr(text);
    if (cidr === undefined) continue;
    const setting = `trustedProxies[${i}]`;
    const widest = WIDEST_PROXY_BLOCK[cidr.family];
    if (cidr.prefix < widest) {
      warnings.push(
        `${setting}: ${text} is wider than one proxy network (/${widest} for IPv${cidr.family}): every ` +
          `address in it may send X-Forwarded-For, and ${FORGES}; list only your proxies' own addresses`,
      );
    }
    if (!cidrOverlaps(cidr, LOOPBACK[cidr.family])) continue;
    for (const [j, l] of config.listen.entries()) {
      if (l.tls !== undefined || !acceptsLoopback(l.host, cidr)) continue;
      const where = l.host.includes(':') ? `[${l.host}]:${l.port}` : `${l.host}:${l.port}`;
      warnings.push(
        `${setting}: ${text} holds loopback and listen[${j}] (${where}) is plain HTTP that loopback reaches: any ` +
          `local process, of any user, can connect there and send X-Forwarded-For, and ${FORGES}; ` +
          'keep it so only on a machine whose every process you trust',
      );
    }
  }
  return warnings;
}

/** Whether a listener bound to `host` takes connections from the loopback addresses of `trusted`'s family. */
function acceptsLoopback(host: string, trusted: Cidr): boolean {
  if (host === 'localhost') return true;
  const address = parseAddress(host)?.address;
  if (address === undefined) return false; // another name: what it resolves to is not known here
  // '::' takes IPv4 as well (dual stack, node's default).
  if (address === '::') return true;
  if (trusted.family === 4) return address === '0.0.0.0' || cidrContains(LOOPBACK[4], address);
  return address === '::1';
}
