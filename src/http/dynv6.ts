/**
 * dynv6's HTTP update API (docs/protocol.md, "dynv6"): `GET /api/update?zone=H&token=T[&ipv4=][&ipv6=][&ipv6prefix=]`
 * (`hostname` or `Hostname` instead of `zone`), as a request of the update path. The token is an update token of H,
 * read as the credentials {user: H, password: T}: the same login checks, limits and outcomes as `/nic/update`; only
 * the framing and the replies differ (`addresses updated` / `addresses unchanged`, errors by HTTP status).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Credentials } from '../app/ports.js';
import type { FamilyAsks, UpdateReply, UpdateService } from '../app/update.js';
import { parseAddress } from '../core/addresses.js';
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';
import { hostReply, requestReply, type HostOutcome, type RequestOutcome } from '../core/outcomes.js';
import type { ParamMap } from '../core/params.js';
import { checkIpv6Prefix } from '../core/prefix.js';
import { retryAfterHeader, type RawReply } from './reply.js';

/** The path, at the root and under basePath. */
export const DYNV6_PATH = '/api/update';

/** dynv6 names the host `zone`, and also accepts `hostname` and `Hostname`. */
const HOST_PARAMS = ['zone', 'hostname', 'Hostname'];

export interface Dynv6Request {
  params: ParamMap;
  headers: IncomingHttpHeaders;
  clientIp: string;
}

/** What a dynv6 request asks of the update path, or the 400 it gets. */
export type Dynv6Ask =
  | {
      hostname: string;
      credentials: Credentials | 'missing' | 'malformed';
      /** Addresses to set (already validated, of their family). */
      ipv4?: string;
      ipv6?: string;
      /** The delegated prefix the linked hosts follow (`network/length`). */
      ipv6prefix?: string;
      families: FamilyAsks;
    }
  | { invalid: string };

/**
 * Parse the framing (pure). Per family: an address sets it; `auto` takes the client address when it is of that family
 * and otherwise leaves the family as it is; `-` removes the family's record; empty leaves it as it is. With neither
 * `ipv4` nor `ipv6` given at all, the client address fills its family, as on `/nic/update`.
 */
export function parseDynv6(params: ParamMap, clientIp: string): Dynv6Ask {
  const hostValue = HOST_PARAMS.map((n) => params.get(n)?.[0]?.trim()).find((v) => v !== undefined && v !== '');
  if (hostValue === undefined) return { invalid: 'zone required' };
  // One name: a comma would make a list of hosts, and one status cannot answer for several.
  if (hostValue.includes(',')) return { invalid: 'invalid zone' };
  const token = params.get('token')?.[0] ?? '';

  const client = parseAddress(clientIp);
  const families: { ipv4?: 'keep' | 'remove'; ipv6?: 'keep' | 'remove' } = {};
  const out: { ipv4?: string; ipv6?: string; ipv6prefix?: string } = {};

  const v4 = params.get('ipv4')?.[0]?.trim();
  if (v4 !== undefined) {
    if (v4 === '') families.ipv4 = 'keep';
    else if (v4 === '-') families.ipv4 = 'remove';
    else if (v4 === 'auto') {
      if (client?.family === 4) out.ipv4 = client.address;
      else families.ipv4 = 'keep';
    } else {
      const parsed = parseAddress(v4);
      if (parsed?.family !== 4) return { invalid: 'invalid ipv4 address' };
      out.ipv4 = parsed.address;
    }
  }

  const v6 = params.get('ipv6')?.[0]?.trim();
  let prefixOfAddress: string | undefined;
  if (v6 !== undefined) {
    if (v6 === '') families.ipv6 = 'keep';
    else if (v6 === '-') families.ipv6 = 'remove';
    else if (v6 === 'auto') {
      if (client?.family === 6) out.ipv6 = client.address;
      else families.ipv6 = 'keep';
    } else if (v6 === '6to4') return { invalid: '6to4 is not supported' };
    else {
      // `2001:db8::7/64`: the address, and (when no ipv6prefix is given) its prefix.
      const [address = '', length, extra] = v6.split('/');
      const parsed = parseAddress(address);
      if (parsed?.family !== 6 || extra !== undefined) return { invalid: 'invalid ipv6 address' };
      if (length !== undefined && !(/^\d{1,3}$/.test(length) && Number(length) <= 128)) {
        return { invalid: 'invalid ipv6 address' };
      }
      out.ipv6 = parsed.address;
      if (length !== undefined) {
        // A length past 64 (a /128) names no delegated prefix: the address alone.
        const prefix = checkIpv6Prefix(`${parsed.address}/${length}`);
        if (!('problem' in prefix)) prefixOfAddress = prefix.text;
      }
    }
  }

  const p = params.get('ipv6prefix')?.[0]?.trim();
  if (p === undefined || p === '') {
    if (prefixOfAddress !== undefined) out.ipv6prefix = prefixOfAddress;
  } else if (p === 'auto' || p === '6to4') {
    return { invalid: `ipv6prefix=${p} is not supported` };
  } else if (p !== '-') {
    // `-` (remove the prefix): nothing to send; the linked hosts keep their addresses.
    const prefix = checkIpv6Prefix(p);
    if ('problem' in prefix) return { invalid: 'invalid ipv6 prefix' };
    out.ipv6prefix = prefix.text;
  }

  return { hostname: hostValue, credentials: tokenCredentials(hostValue, token), ...out, families };
}

/** As Basic credentials are read (request.ts): missing, malformed (control characters, too long), or the pair. */
function tokenCredentials(host: string, token: string): Credentials | 'missing' | 'malformed' {
  if (token === '') return 'missing';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(host + token) || host.length > 256 || token.length > MAX_PASSWORD_LENGTH) {
    return 'malformed';
  }
  return { user: host, password: token };
}

/** The update path's parameters for an ask: the host, its addresses and prefix; wildcard, MX and backup MX kept. */
export function dynv6Params(ask: Exclude<Dynv6Ask, { invalid: string }>): Map<string, string[]> {
  const params = new Map<string, string[]>([
    ['hostname', [ask.hostname]],
    ['wildcard', ['NOCHG']],
    ['mx', ['NOCHG']],
    ['backmx', ['NOCHG']],
  ]);
  if (ask.ipv4 !== undefined) params.set('myip', [ask.ipv4]);
  if (ask.ipv6 !== undefined) params.set('myipv6', [ask.ipv6]);
  if (ask.ipv6prefix !== undefined) params.set('ipv6prefix', [ask.ipv6prefix]);
  return params;
}

export async function answerDynv6(req: Dynv6Request, update: UpdateService): Promise<RawReply> {
  const ask = parseDynv6(req.params, req.clientIp);
  if ('invalid' in ask) return { status: 400, body: ask.invalid };
  const reply = await update.update({
    credentials: ask.credentials,
    userAgent: req.headers['user-agent'],
    clientIp: req.clientIp,
    params: dynv6Params(ask),
    families: ask.families,
  });
  return dynv6Reply(reply);
}

/** Status and body of each host outcome: 2xx only for a change or none (what dynv6's clients check). */
const HOST_ANSWER: Readonly<Record<HostOutcome, readonly [number, string]>> = {
  changed: [200, 'addresses updated'],
  unchanged: [200, 'addresses unchanged'],
  'invalid-name': [400, 'invalid zone'],
  'unknown-host': [404, 'zone not found'],
  'not-owner': [403, 'token not allowed for this zone'],
  'not-dynamic': [403, 'zone is not dynamic'],
  closed: [403, 'zone is not active'],
  abuse: [429, 'too many requests'],
  'offline-not-allowed': [403, 'offline not allowed'],
  'dns-failed': [502, 'dns update failed'],
};

const REQUEST_ANSWER: Readonly<Record<RequestOutcome, readonly [number, string]>> = {
  'bad-credentials': [401, 'invalid authentication token'],
  'bad-agent': [403, 'user agent not allowed'],
  'too-many-hosts': [400, 'invalid zone'],
  unavailable: [503, 'service unavailable'],
};

/**
 * The reply bytes: no trailing newline (a client comparing the body exactly passes; `$(curl …)`, `grep` and
 * substring matches pass either way). `outcomeToken`: the update path's token, for the metrics.
 */
export function dynv6Reply(reply: UpdateReply): RawReply {
  const outcome: HostOutcome | RequestOutcome =
    reply.kind === 'request' ? reply.outcome : (reply.lines[0]?.outcome ?? 'invalid-name');
  const [status, body] = reply.kind === 'request' ? REQUEST_ANSWER[reply.outcome] : HOST_ANSWER[outcome as HostOutcome];
  const outcomeToken =
    reply.kind === 'request' ? requestReply(reply.outcome).token : hostReply(outcome as HostOutcome).token;
  const headers = retryAfterHeader([outcome]);
  return { status, body, outcomeToken, ...(headers.length > 0 ? { headers } : {}) };
}
