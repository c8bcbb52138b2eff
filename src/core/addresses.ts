/** IP address parsing for `myip` and the detected client address (pure). */
import { isIPv4, isIPv6 } from 'node:net';

export interface AddressPair {
  ipv4?: string;
  ipv6?: string;
}

/** Canonical text of an IPv6 address (lowercase, longest zero run compressed). */
export function canonicalIPv6(addr: string): string {
  // URL's host parser canonicalises IPv6 per RFC 5952.
  return new URL(`http://[${addr}]/`).hostname.slice(1, -1);
}

/** An octet of more than one digit that starts with 0 (node 20's isIPv4 refuses these already; older ones did not). */
const LEADING_ZERO_OCTET = /(?:^|\.)0\d/;

/**
 * Parse one address. `::ffff:a.b.c.d` is unmapped to IPv4. Anything else that is not
 * a plain address (a prefix like `2001:db8::/56`, a zone index, garbage) is `undefined`.
 */
export function parseAddress(raw: string): { family: 4 | 6; address: string } | undefined {
  const text = raw.trim();
  if (isIPv4(text)) {
    // Reject leading-zero octets (ambiguous octal in some parsers).
    if (LEADING_ZERO_OCTET.test(text)) return undefined;
    return { family: 4, address: text };
  }
  if (text.includes('%') || !isIPv6(text)) return undefined;
  const canonical = canonicalIPv6(text);
  const mapped =
    /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(canonical) ?? /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped) {
    if (mapped.length === 2) return { family: 4, address: mapped[1]! };
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return { family: 4, address: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}` };
  }
  return { family: 6, address: canonical };
}

/**
 * Collect addresses from lists of comma-separated values: `mixed` (myip) may hold either
 * family, `ipv6Only` (its IPv6 aliases) only IPv6 — an IPv4 address there is ignored like any
 * item that does not parse. The first valid address of each family wins, `mixed` first.
 */
export function parseAddressList(
  mixed: readonly string[],
  ipv6Only: readonly string[] = [],
  /** An item this says is refused is skipped as a malformed one is (`addresses.refuse`). */
  refused?: (address: string) => boolean,
): AddressPair {
  const out: AddressPair = {};
  // Loops, not split/map/filter chains: this runs on every request (docs/operators.md, "Performance").
  const take = (values: readonly string[], onlyIPv6: boolean): void => {
    for (const value of values) {
      for (const item of value.includes(',') ? value.split(',') : [value]) {
        const parsed = parseAddress(item);
        if (parsed === undefined || (refused !== undefined && refused(parsed.address))) continue;
        if (parsed.family === 4) {
          if (!onlyIPv6) out.ipv4 ??= parsed.address;
        } else out.ipv6 ??= parsed.address;
      }
    }
  };
  take(mixed, false);
  take(ipv6Only, true);
  return out;
}

/** Normalise a socket peer address (unmap IPv4-mapped IPv6). */
export function normalizePeer(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const parsed = parseAddress(raw);
  return parsed?.address;
}

/** A parsed CIDR block for trusted-proxy matching. */
export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

export function addressBytes(address: string): Uint8Array {
  if (isIPv4(address)) return Uint8Array.from(address.split('.').map(Number));
  const full = canonicalIPv6(address);
  const [head, tail] = full.includes('::') ? full.split('::') : [full, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 255;
  });
  return out;
}

/** Parse `a.b.c.d/n`, `x::/n` or a bare address. `undefined` when invalid. */
export function parseCidr(text: string): Cidr | undefined {
  const parsed = checkCidr(text);
  return 'problem' in parsed ? undefined : parsed;
}

/**
 * Parse `a.b.c.d/n`, `x::/n` or a bare address; or say, in one line, why `text` is none. A zone
 * index (`fe80::1%eth0`, also with `/64`) is refused by name: node's isIPv6 accepts it, but it
 * names an interface of one host, not addresses a peer can have (the peer's is read without it).
 */
export function checkCidr(text: string): Cidr | { problem: string } {
  const trimmed = text.trim();
  const invalid = { problem: `not a CIDR block: ${JSON.stringify(trimmed)}` };
  const [addr, len, extra] = trimmed.split('/');
  if (addr === undefined || extra !== undefined) return invalid;
  const zone = addr.indexOf('%');
  if (zone >= 0) {
    const index = addr.slice(zone);
    return {
      problem:
        `${JSON.stringify(trimmed)} has a zone index (${index}): a CIDR block names addresses, ` +
        `not an interface; leave out ${index}`,
    };
  }
  const family = isIPv4(addr) ? 4 : isIPv6(addr) ? 6 : undefined;
  if (!family) return invalid;
  const max = family === 4 ? 32 : 128;
  const prefix = len === undefined ? max : /^\d{1,3}$/.test(len) ? Number(len) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return invalid;
  return { family, bytes: addressBytes(addr), prefix };
}

export function cidrContains(cidr: Cidr, address: string): boolean {
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  if (family !== cidr.family) return false;
  const bytes = addressBytes(address);
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

/** Whether two blocks share an address (one holds the other, CIDR blocks being nested or apart). */
export function cidrOverlaps(a: Cidr, b: Cidr): boolean {
  if (a.family !== b.family) return false;
  let bits = Math.min(a.prefix, b.prefix);
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((a.bytes[i]! & mask) !== (b.bytes[i]! & mask)) return false;
  }
  return true;
}
