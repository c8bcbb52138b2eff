/**
 * The DuckDNS dialect (docs/protocol.md, "DuckDNS"): `GET /update?domains=D[,D…]&token=T[&ip=][&ipv6=][&txt=]
 * [&clear=true][&verbose=true]`, answered `OK` or `KO` as duckdns.org answers. The request becomes one of the update
 * path (UpdateService: the same login checks, limits and outcomes as `/nic/update`) with the credentials
 * {user: the first domain's FQDN, password: the token}; only the framing differs. The body hides which refusal it
 * was, so the reply names it for the metrics (RawReply.outcomeToken) and the log says it (debug).
 */
import type { Logger } from '../core/log.js';
import { parseAddress } from '../core/addresses.js';
import { normalizeHostname } from '../core/names.js';
import { hostReply, requestReply, type Outcome } from '../core/outcomes.js';
import { looksLikeToken } from '../core/update-tokens.js';
import type { Credentials } from '../app/ports.js';
import type { FamilyAsks, UpdateReply, UpdateService } from '../app/update.js';
import { retryAfterHeader, type RawReply } from './reply.js';
import { parseParams } from './request.js';

/** The route of `GET /update` (and under basePath); `POST /update` stays acme-dns (http/acme.ts). */
export const DUCKDNS_ROUTE = 'duckdns';

/** `route` as the path alone gives it, made `duckdns` for a GET of the acme-dns path. */
export function withDuckDns<R extends string>(
  route: R | undefined,
  method: string | undefined,
): R | 'duckdns' | undefined {
  return route === 'acme-dns' && method === 'GET' ? DUCKDNS_ROUTE : route;
}

export interface DuckDnsRequest {
  /** The request target's query string (undecoded). */
  query: string;
  userAgent: string | undefined;
  clientIp: string;
}

export interface DuckDnsSettings {
  /** `dialects.duckdns.zone`: the zone single labels are names in; absent: single labels are refused. */
  zone?: string;
}

/** A DuckDNS request as the update path takes it, or why it is refused before (the metric's token then). */
export type DuckDnsAsk =
  | {
      credentials: Credentials | 'missing' | 'malformed';
      params: Map<string, string[]>;
      families?: FamilyAsks;
      /** A TXT request: the verbose reply shows no address. */
      txt: boolean;
      verbose: boolean;
    }
  | { refused: 'notfqdn' | 'malformed'; reason: string };

/**
 * The query as the update path's parameters. `domains`: FQDNs, or single labels in `settings.zone`; the first one is
 * the login's user. `token`: the password, a token only (not token-shaped: malformed credentials, so no password is
 * ever checked). Wildcard, MX and backup MX stay as they are (DuckDNS has none of them).
 */
export function parseDuckDns(query: string, settings: DuckDnsSettings): DuckDnsAsk {
  const q = new Map<string, string[]>();
  parseParams(q, query);
  const one = (name: string): string | undefined => q.get(name)?.[0];
  const names = (one('domains') ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  if (names.length === 0) return { refused: 'notfqdn', reason: 'no domains' };
  const fqdns: string[] = [];
  for (const name of names) {
    const bare = name.replace(/\.$/, '');
    if (bare.includes('.')) fqdns.push(name);
    else if (settings.zone === undefined)
      return { refused: 'notfqdn', reason: 'a single label, no dialects.duckdns.zone' };
    else fqdns.push(`${bare}.${settings.zone}`);
  }
  const token = one('token') ?? '';
  const user = normalizeHostname(fqdns[0]!) ?? fqdns[0]!;
  const credentials: Credentials | 'missing' | 'malformed' =
    token === '' ? 'missing' : looksLikeToken(token) ? { user, password: token } : 'malformed';

  const params = new Map<string, string[]>([
    ['hostname', [fqdns.join(',')]],
    ['wildcard', ['NOCHG']],
    ['mx', ['NOCHG']],
    ['backmx', ['NOCHG']],
  ]);
  const verbose = isTrue(one('verbose'));
  const clear = isTrue(one('clear'));
  const txt = one('txt');
  if (txt !== undefined) {
    // As duckdns.org: with clear=true the record is cleared whatever txt says (`txt=removed&clear=true`, `txt=`).
    if (clear) params.set('clear', ['true']);
    else params.set('txt', [txt]);
    return { credentials, params, txt: true, verbose };
  }
  if (clear) {
    const families = { ipv4: 'remove', ipv6: 'remove' } as const;
    return { credentials, params, families, txt: false, verbose };
  }

  const ip = (one('ip') ?? '').trim();
  const ipv6 = (one('ipv6') ?? '').trim();
  const v4 = ip === '' ? undefined : parseAddress(ip);
  const v6 = ipv6 === '' ? undefined : parseAddress(ipv6);
  if (ip !== '' && v4 === undefined) return { refused: 'malformed', reason: 'ip is not an address' };
  if (ipv6 !== '' && v6?.family !== 6) return { refused: 'malformed', reason: 'ipv6 is not an IPv6 address' };
  // `ip` may hold either family; `ipv6` is the AAAA (and wins over an IPv6 `ip`). Neither: the client's address.
  if (v4 !== undefined && !(v4.family === 6 && v6 !== undefined)) params.set('myip', [v4.address]);
  if (v6 !== undefined) params.set('myipv6', [v6.address]);
  return { credentials, params, txt: false, verbose };
}

function isTrue(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === 'true';
}

export async function answerDuckDns(
  req: DuckDnsRequest,
  settings: DuckDnsSettings,
  update: UpdateService,
  logger: Logger,
): Promise<RawReply> {
  const ask = parseDuckDns(req.query, settings);
  if ('refused' in ask) {
    // A value the update path cannot take: no reply token of its own (the metric's `other`).
    const outcome = ask.refused === 'malformed' ? 'other' : ask.refused;
    logger.debug('duckdns update refused', { reply: 'KO', outcome, reason: ask.reason });
    return ko(outcome, []);
  }
  const reply = await update.update({
    credentials: ask.credentials,
    userAgent: req.userAgent,
    clientIp: req.clientIp,
    params: ask.params,
    tokensOnly: true,
    ...(ask.families === undefined ? {} : { families: ask.families }),
  });
  const answer = duckDnsReply(reply, ask);
  if (answer.outcomeToken !== 'good' && answer.outcomeToken !== 'nochg')
    logger.debug('duckdns update refused', { reply: 'KO', outcome: answer.outcomeToken });
  return answer;
}

/**
 * `OK` when every name got good or nochg; otherwise `KO` (200 both), with `Retry-After` when an outcome says "come
 * back later". Verbose OK: `OK\n<ipv4>\n<ipv6>\n<UPDATED|NOCHANGE>`, a family this request did not set blank.
 */
export function duckDnsReply(reply: UpdateReply, ask: { txt: boolean; verbose: boolean }): RawReply {
  if (reply.kind === 'request') return ko(requestReply(reply.outcome).token, [reply.outcome]);
  const failed = reply.lines.find((l) => l.outcome !== 'changed' && l.outcome !== 'unchanged');
  if (failed !== undefined || reply.lines.length === 0) {
    const outcome = failed?.outcome ?? 'invalid-name';
    return ko(
      hostReply(outcome).token,
      reply.lines.map((l) => l.outcome),
    );
  }
  const changed = reply.lines.some((l) => l.outcome === 'changed');
  const outcomeToken = changed ? 'good' : 'nochg';
  if (!ask.verbose) return { status: 200, body: 'OK', outcomeToken };
  let ipv4 = '';
  let ipv6 = '';
  // The addresses this request set (a TXT request's line shows its value instead: no address).
  if (!ask.txt) {
    for (const a of (reply.lines[0]!.addresses ?? '').split(',')) {
      if (a.includes(':')) ipv6 ||= a;
      else if (a !== '') ipv4 ||= a;
    }
  }
  return { status: 200, body: `OK\n${ipv4}\n${ipv6}\n${changed ? 'UPDATED' : 'NOCHANGE'}`, outcomeToken };
}

/** A request the update path failed on unexpectedly: `KO`, counted as 911 (what /nic/update answers then). */
export function duckDnsFault(): RawReply {
  return ko('911', ['unavailable']);
}

function ko(outcomeToken: string, outcomes: readonly Outcome[]): RawReply {
  const headers = retryAfterHeader(outcomes);
  return { status: 200, body: 'KO', outcomeToken, ...(headers.length > 0 ? { headers } : {}) };
}
