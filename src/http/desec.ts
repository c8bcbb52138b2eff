/**
 * deSEC's variants of the dyndns2 request (docs/protocol.md, "deSEC variants"), read on the update path's parameters:
 * `myipv4=` / `myipv6=` with `preserve` (keep that family) and an empty value (remove that family's record),
 * `Authorization: Token T`, and, when `http.queryCredentials` is on, `username=` / `password=` in the query string.
 *
 * The seed's own requests keep their replies: the deSEC meaning of an empty or `preserve` value applies only to a
 * request in deSEC form, one that carries `myipv4` (a parameter the seed never defined) or authenticates with
 * `Authorization: Token`. Elsewhere `myipv6=` and `myipv6=preserve` stay what the seed made of them: items that do
 * not parse, ignored.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Credentials } from '../app/ports.js';
import type { FamilyAsks } from '../app/update.js';
import { parseAddress } from '../core/addresses.js';
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';
import { parseUpdateParams, type ParamMap } from '../core/params.js';
import { paramsOf, parseBasicAuth } from './request.js';

/** What the update path hands to UpdateService for one request. */
export interface Dyndns2Ask {
  credentials: Credentials | 'missing' | 'malformed';
  params: ParamMap;
  families?: FamilyAsks;
}

export interface Dyndns2Options {
  /** `http.queryCredentials`: `username=` / `password=` in the query string are credentials (off by default). */
  queryCredentials: boolean;
}

/** The value that keeps a family as it is. */
const PRESERVE = 'preserve';

/**
 * The credentials, parameters and family asks of an update request. `params`: query and body together; `query`: the
 * query string, the only place credentials are read from (never a POST body).
 */
export function dyndns2Ask(
  headers: IncomingHttpHeaders,
  params: ParamMap,
  query: string,
  options: Dyndns2Options,
): Dyndns2Ask {
  const token = tokenAuth(headers.authorization);
  let credentials = token ?? parseBasicAuth(headers.authorization);
  if (credentials === 'missing' && options.queryCredentials) credentials = queryCredentials(paramsOf(query, undefined));
  const desecForm = params.has('myipv4') || token !== undefined;
  return desecForm ? { credentials, ...desecAddresses(params) } : { credentials, params };
}

/**
 * `Authorization: Token T` (scheme case-insensitive): the token alone, with no user (Credentials: an empty user is
 * the token-alone login, which Basic never yields). undefined: another scheme, or no header.
 */
export function tokenAuth(header: string | undefined): Credentials | 'malformed' | undefined {
  const m = header === undefined ? null : /^\s*token(?:\s+(.*?))?\s*$/i.exec(header);
  if (m === null) return undefined;
  const password = m[1] ?? '';
  return validSecret(password) ? { user: '', password } : 'malformed';
}

/**
 * `username=` / `password=` from the query string (FRITZ!Box-style URLs): no `password` is no credentials; no
 * `username` is the token-alone login, as `Authorization: Token`.
 */
export function queryCredentials(query: ParamMap): Credentials | 'missing' | 'malformed' {
  const password = query.get('password')?.[0];
  if (password === undefined) return 'missing';
  const user = query.get('username')?.[0] ?? '';
  // Control characters are exactly what this refuses (as parseBasicAuth does).
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(user) || user.length > 256 || !validSecret(password)) return 'malformed';
  return { user, password };
}

function validSecret(secret: string): boolean {
  // eslint-disable-next-line no-control-regex
  return secret !== '' && secret.length <= MAX_PASSWORD_LENGTH && !/[\x00-\x1f\x7f]/.test(secret);
}

/**
 * A deSEC-form request's addresses: the IPv4 addresses of `myipv4` join `myip`'s (after them: `myip` first, as deSEC
 * reads them); `preserve` keeps a family and an empty value removes its record, unless the request gives that family
 * an address (an address beats `preserve`, `preserve` beats an empty value: the bridge never deletes what the same
 * request names or keeps). Items that do not parse are ignored, as in the seed's `myip`.
 */
export function desecAddresses(params: ParamMap): { params: ParamMap; families?: FamilyAsks } {
  const v4 = familyAsk(params.get('myipv4') ?? []);
  const v6 = familyAsk(params.get('myipv6') ?? []);
  const out = new Map(params);
  const ipv4 = v4.addresses.filter((a) => parseAddress(a)?.family === 4);
  if (ipv4.length > 0) out.set('myip', [...(params.get('myip') ?? []), ipv4.join(',')]);
  out.delete('myipv4');
  if (v6.addresses.length > 0) out.set('myipv6', v6.addresses);
  else out.delete('myipv6');

  // The seed's reading of the rewritten request: `myip`, then its IPv6 aliases.
  const given = parseUpdateParams(out).addresses;
  const families: { ipv4?: 'keep' | 'remove'; ipv6?: 'keep' | 'remove' } = {};
  if (given.ipv4 === undefined && v4.ask !== undefined) families.ipv4 = v4.ask;
  if (given.ipv6 === undefined && v6.ask !== undefined) families.ipv6 = v6.ask;
  return families.ipv4 === undefined && families.ipv6 === undefined ? { params: out } : { params: out, families };
}

/** One deSEC family parameter's values: its address items, and `keep` (any `preserve`) or `remove` (any empty). */
function familyAsk(values: readonly string[]): { addresses: string[]; ask?: 'keep' | 'remove' } {
  const addresses: string[] = [];
  let keep = false;
  let remove = false;
  for (const value of values) {
    const text = value.trim();
    if (text === '') remove = true;
    else if (text.toLowerCase() === PRESERVE) keep = true;
    else for (const item of text.split(',')) if (parseAddress(item) !== undefined) addresses.push(item.trim());
  }
  return { addresses, ...(keep ? { ask: 'keep' as const } : remove ? { ask: 'remove' as const } : {}) };
}
