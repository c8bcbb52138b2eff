/**
 * IPv6 prefixes and interface identifiers (pure): what `ipv6prefix=` carries and what `host link --iid` names, and
 * the address a linked host gets from them (docs/protocol.md, "IPv6 prefixes").
 */
import { isIPv6 } from 'node:net';
import { addressBytes, canonicalIPv6 } from './addresses.js';

/** Delegated prefixes are /48 to /64 in practice; anything up to /64 leaves room for a 64-bit interface ID. */
export const MIN_PREFIX_LENGTH = 1;
export const MAX_PREFIX_LENGTH = 64;
/** An interface identifier fills at most the low 64 bits of an address. */
export const IID_BITS = 64;
/** Hosts that may follow one parent: their changes and the parent's go out in one UPDATE message. */
export const MAX_LINKS_PER_PARENT = 40;

export interface Ipv6Prefix {
  /** The network address, host bits cleared, canonical (RFC 5952). */
  network: string;
  length: number;
  /** `network/length`: how it is stored and shown. */
  text: string;
}

const ALL_ONES = (1n << 128n) - 1n;

function toBigInt(address: string): bigint {
  return addressBytes(address).reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

function fromBigInt(value: bigint): string {
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((value >> BigInt(i * 16)) & 0xffffn).toString(16));
  return canonicalIPv6(groups.join(':'));
}

/** A plain IPv6 address: no zone index, no port, no brackets. */
function isPlainIPv6(text: string): boolean {
  return !text.includes('%') && isIPv6(text);
}

function mask(length: number): bigint {
  return length === 0 ? 0n : (ALL_ONES << BigInt(128 - length)) & ALL_ONES;
}

/**
 * Why `raw` is not a delegated prefix, or the prefix. Host bits beyond the length are cleared
 * (`2001:db8:1200:3456::1/56` is `2001:db8:1200:3400::/56`): routers send the network address anyway, and some send
 * their own address with the length. Multicast (ff00::/8), link-local (fe80::/10) and an all-zero network are refused.
 */
export function checkIpv6Prefix(raw: string): Ipv6Prefix | { problem: string } {
  const text = typeof raw === 'string' ? raw.trim() : '';
  const parts = text.split('/');
  if (parts.length !== 2 || !isPlainIPv6(parts[0]!)) {
    return { problem: `not an IPv6 prefix (such as 2001:db8:1200:3400::/56): ${JSON.stringify(raw)}` };
  }
  const lengthText = parts[1]!;
  const length = /^\d{1,3}$/.test(lengthText) ? Number(lengthText) : NaN;
  if (!(length >= MIN_PREFIX_LENGTH && length <= MAX_PREFIX_LENGTH)) {
    return { problem: `prefix length must be ${MIN_PREFIX_LENGTH} to ${MAX_PREFIX_LENGTH}: ${JSON.stringify(raw)}` };
  }
  const value = toBigInt(parts[0]!) & mask(length);
  if (value === 0n) return { problem: `an all-zero network is not a prefix: ${JSON.stringify(raw)}` };
  const top = value >> 112n;
  if (top >> 8n === 0xffn) return { problem: `a multicast prefix: ${JSON.stringify(raw)}` };
  if (top >> 6n === 0x3fan) return { problem: `a link-local prefix: ${JSON.stringify(raw)}` };
  const network = fromBigInt(value);
  return { network, length, text: `${network}/${length}` };
}

/** The prefix of `raw`, or undefined when it is not one (see checkIpv6Prefix). */
export function parseIpv6Prefix(raw: string): Ipv6Prefix | undefined {
  const checked = checkIpv6Prefix(raw);
  return 'problem' in checked ? undefined : checked;
}

/**
 * An interface identifier as `host link --iid` takes it: an IPv6 address whose upper 64 bits are zero
 * (`::1234:5678:9abc:def0`), or up to four groups alone (`1234:5678:9abc:def0`). Not zero (that is the subnet-router
 * anycast address). Returns its canonical text, or the problem.
 */
export function checkInterfaceId(raw: string): { iid: string } | { problem: string } {
  const given = typeof raw === 'string' ? raw.trim() : '';
  const text = /^[0-9a-f]{1,4}(:[0-9a-f]{1,4}){0,3}$/i.test(given) ? `::${given}` : given;
  if (!isPlainIPv6(text)) {
    return { problem: `not an interface identifier (such as ::1234:5678:9abc:def0): ${JSON.stringify(raw)}` };
  }
  const value = toBigInt(text);
  if (value >> BigInt(IID_BITS) !== 0n) {
    return { problem: `an interface identifier has at most ${IID_BITS} bits (::xxxx:xxxx:xxxx:xxxx): ${given}` };
  }
  if (value === 0n) return { problem: 'an interface identifier must not be zero' };
  return { iid: fromBigInt(value) };
}

/**
 * The address a linked host gets: the prefix's bits, zeros up to bit 64 (the first /64 of the prefix), then the
 * interface identifier's 64 bits. `iid` as checkInterfaceId returns it.
 */
export function addressInPrefix(prefix: Ipv6Prefix, iid: string): string {
  return fromBigInt(toBigInt(prefix.network) | (toBigInt(iid) & ((1n << BigInt(IID_BITS)) - 1n)));
}

/**
 * What a parent's update that carries `prefix` expects stored (app/ports Expectations): the same prefix, and no link
 * added since it was last published. Either differs: a change, even when the parent's own records hold.
 */
export function prefixExpectations(prefix: Ipv6Prefix): Record<string, string> {
  return { prefix: prefix.text, linksChanged: '' };
}
