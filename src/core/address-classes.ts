/**
 * Address classes an operator may refuse as update addresses (`addresses.refuse`): a refused `myip` item is
 * ignored as a malformed one is, and a refused client address fills nothing (docs/protocol.md, "Address classes").
 */
import { cidrContains, parseCidr, type Cidr } from './addresses.js';

const BLOCKS = {
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
  loopback: ['127.0.0.0/8', '::1/128'],
  'link-local': ['169.254.0.0/16', 'fe80::/10'],
  'unique-local': ['fc00::/7'],
  cgnat: ['100.64.0.0/10'],
  documentation: ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24', '2001:db8::/32'],
  multicast: ['224.0.0.0/4', 'ff00::/8'],
  unspecified: ['0.0.0.0/32', '::/128'],
} as const;

export type AddressClass = keyof typeof BLOCKS;
export const ADDRESS_CLASSES = Object.keys(BLOCKS) as AddressClass[];

const PARSED: ReadonlyArray<readonly [AddressClass, readonly Cidr[]]> = ADDRESS_CLASSES.map(
  (c) => [c, BLOCKS[c].map((b) => parseCidr(b)!)] as const,
);

/** The first of `refuse`'s classes `address` (a parsed, canonical address) is in; undefined: not refused. */
export function refusedClass(address: string, refuse: readonly AddressClass[]): AddressClass | undefined {
  if (refuse.length === 0) return undefined;
  for (const [klass, blocks] of PARSED) {
    if (refuse.includes(klass) && blocks.some((b) => cidrContains(b, address))) return klass;
  }
  return undefined;
}
