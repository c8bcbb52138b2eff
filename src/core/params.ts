/**
 * Parsing of the update request's parameters (pure). Input: the decoded parameter
 * multimap from the query string and/or form body. Unknown parameters are ignored.
 */
import { parseAddressList, type AddressPair } from './addresses.js';
import { normalizeHostname } from './names.js';
import { parseIpv6Prefix, type Ipv6Prefix } from './prefix.js';
import { parseTxtAsk, txtHostname, type TxtAsk } from './txt.js';

export const MAX_HOSTS_PER_REQUEST = 20;

export type ParamMap = ReadonlyMap<string, readonly string[]>;

/** One requested host name: its normalised form, or `undefined` when the syntax is invalid. */
export interface RequestedHost {
  raw: string;
  fqdn: string | undefined;
}

export interface UpdateParams {
  /** Empty when `hostname` is missing or empty (→ notfqdn). */
  hosts: RequestedHost[];
  /** More than MAX_HOSTS_PER_REQUEST names (→ numhost). */
  tooManyHosts: boolean;
  addresses: AddressPair;
  wildcard: boolean | 'keep';
  /** `keep` = NOCHG (Dyn's "leave as it is"); undefined when absent, empty or not a host name (→ MX deleted). */
  mx: string | 'keep' | undefined;
  backmx: boolean | 'keep';
  offline: boolean;
  /** `ipv6prefix` / `ip6lanprefix`: the first that is a prefix (docs/protocol.md, "IPv6 prefixes"); else undefined. */
  ipv6Prefix?: Ipv6Prefix;
  /** `system` is absent or one of dyndns/statdns/custom/noip, and a `txt` value is valid (else `badsys`). */
  systemSupported: boolean;
  /** `txt` / `clear`: a change of the ACME TXT set, and only that (docs/protocol.md, "ACME TXT records"). */
  txt?: TxtAsk;
}

/**
 * `noip`: what ddclient's `protocol=noip` sends (issue 31; the seed answered it `badsys`), the same request as
 * dyndns's (docs/protocol.md, "deSEC variants").
 */
const SUPPORTED_SYSTEMS = new Set(['dyndns', 'statdns', 'custom', 'noip']);
/**
 * `myip`'s aliases that carry the IPv6 address (docs/protocol.md, "The update request"); an IPv4 address in them is
 * ignored.
 */
const IPV6_ALIASES = ['myipv6', 'ipv6', 'myip6'];
/** The delegated prefix: dynv6's name, then the FRITZ!Box's. */
const PREFIX_NAMES = ['ipv6prefix', 'ip6lanprefix'];

function first(params: ParamMap, name: string): string | undefined {
  return params.get(name)?.[0];
}

function yesNo(value: string | undefined): boolean {
  return value !== undefined && value.trim().toUpperCase() === 'YES';
}

/** The names of a `hostname` value (trimmed, empty items dropped); undefined past MAX_HOSTS_PER_REQUEST. */
export function hostnameList(value: string): string[] | undefined {
  const names: string[] = [];
  for (const item of value.includes(',') ? value.split(',') : [value]) {
    const name = item.trim();
    if (name.length > 0) names.push(name);
  }
  return names.length > MAX_HOSTS_PER_REQUEST ? undefined : names;
}

export function parseUpdateParams(
  params: ParamMap,
  /** Addresses of a refused class: skipped as malformed ones are (docs/protocol.md, "Address classes"). */
  refused?: (address: string) => boolean,
): UpdateParams {
  const rawHosts = hostnameList(first(params, 'hostname') ?? '');
  const tooManyHosts = rawHosts === undefined;
  const txt = parseTxtAsk(first(params, 'txt'), first(params, 'clear'));
  // A TXT change may name the host as its challenge name, `_acme-challenge.<host>`.
  const hostOf = txt === undefined ? normalizeHostname : txtHostname;
  const hosts = (rawHosts ?? []).map((raw) => ({ raw, fqdn: hostOf(raw) }));

  const ipv6Only: string[] = [];
  for (const name of IPV6_ALIASES) for (const value of params.get(name) ?? []) ipv6Only.push(value);
  const addresses = parseAddressList(params.get('myip') ?? [], ipv6Only, refused);

  const wildcardValue = first(params, 'wildcard')?.trim().toUpperCase();
  const wildcard = wildcardValue === 'ON' ? true : wildcardValue === 'NOCHG' ? 'keep' : false;

  const mxValue = first(params, 'mx')?.trim() ?? '';
  const mx = mxValue === '' ? undefined : mxValue.toUpperCase() === 'NOCHG' ? 'keep' : normalizeHostname(mxValue);
  const backmxValue = first(params, 'backmx')?.trim().toUpperCase();

  const system = first(params, 'system')?.trim().toLowerCase();

  return {
    hosts,
    tooManyHosts,
    addresses,
    wildcard,
    mx,
    backmx: backmxValue === 'NOCHG' ? 'keep' : yesNo(backmxValue),
    offline: yesNo(first(params, 'offline')),
    // Absent as undefined, not spread in: a spread in the middle of a literal cost V8 a copy into a fresh object
    // shape on every request (BENCHMARKS.md, "Where a nochg goes").
    ipv6Prefix: prefixParam(params),
    systemSupported: (system === undefined || system === '' || SUPPORTED_SYSTEMS.has(system)) && txt?.op !== 'invalid',
    txt,
  };
}

function prefixParam(params: ParamMap): Ipv6Prefix | undefined {
  for (const name of PREFIX_NAMES) {
    const prefix = params
      .get(name)
      ?.map(parseIpv6Prefix)
      .find((p) => p !== undefined);
    if (prefix !== undefined) return prefix;
  }
  return undefined;
}

/** `a,b` style address text for a reply line: IPv4 first, comma separated. */
export function formatAddresses(pair: AddressPair): string {
  return [pair.ipv4, pair.ipv6].filter((a): a is string => a !== undefined).join(',');
}
