/**
 * The two APIs ACME clients already speak (docs/protocol.md, "ACME client APIs"), as requests of the update path with
 * `txt=`: lego's httpreq provider (`POST /acme/present`, `/acme/cleanup`, JSON `{fqdn, value}` or, in its RAW mode,
 * `{domain, token, keyAuth}`, Basic credentials) and the acme-dns API (`POST /update`, `X-Api-User` / `X-Api-Key`,
 * JSON `{subdomain, txt}`). The same login checks, limits and outcomes as `/nic/update`; only the framing differs.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Credentials } from '../app/ports.js';
import type { UpdateReply, UpdateService } from '../app/update.js';
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';
import { hostReply, requestReply, type HostOutcome, type RequestOutcome } from '../core/outcomes.js';
import { isValidTxtValue, txtValueOfKeyAuthorization } from '../core/txt.js';
import { retryAfterHeader, type RawReply } from './reply.js';
import { parseBasicAuth } from './request.js';

export type AcmeRoute = 'acme-present' | 'acme-cleanup' | 'acme-dns';

/** The paths of each API (at the root and under basePath). */
export const ACME_PATHS: ReadonlyArray<readonly [string, AcmeRoute]> = [
  ['/acme/present', 'acme-present'],
  ['/acme/cleanup', 'acme-cleanup'],
  ['/update', 'acme-dns'],
];

export function isAcmeRoute(route: string): route is AcmeRoute {
  return route === 'acme-present' || route === 'acme-cleanup' || route === 'acme-dns';
}

export interface AcmeRequest {
  route: AcmeRoute;
  headers: IncomingHttpHeaders;
  /** The request body as text ('' when none). */
  body: string;
  clientIp: string;
  realm: string;
}

/** HTTP status of each outcome on these APIs: 2xx only for good and nochg (what the clients check). */
const HOST_STATUS: Readonly<Record<HostOutcome, number>> = {
  changed: 200,
  unchanged: 200,
  'invalid-name': 400,
  'not-dynamic': 400,
  'unknown-host': 403,
  'not-owner': 403,
  closed: 403,
  abuse: 429,
  'offline-not-allowed': 403,
  'dns-failed': 502,
};

const REQUEST_STATUS: Readonly<Record<RequestOutcome, number>> = {
  'bad-credentials': 401,
  'bad-agent': 403,
  'too-many-hosts': 400,
  unavailable: 503,
};

export async function answerAcme(req: AcmeRequest, update: UpdateService): Promise<RawReply> {
  const ask = req.route === 'acme-dns' ? acmeDnsAsk(req) : httpreqAsk(req);
  if ('invalid' in ask) return ask.invalid;
  const params = new Map<string, string[]>([
    ['hostname', [ask.hostname]],
    ['txt', [ask.value]],
  ]);
  if (req.route === 'acme-cleanup') params.set('clear', ['true']);
  const reply = await update.update({
    credentials: ask.credentials,
    userAgent: req.headers['user-agent'],
    clientIp: req.clientIp,
    params,
  });
  return req.route === 'acme-dns' ? acmeDnsReply(reply, ask.value, req.realm) : httpreqReply(reply, req.realm);
}

type Ask =
  { hostname: string; value: string; credentials: Credentials | 'missing' | 'malformed' } | { invalid: RawReply };

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A key of an acme-dns body in any case, as acme-dns (Go's encoding/json) reads it: lego's client
 * (goacmedns) sends `{"SubDomain", "Txt"}`.
 */
function field(json: Record<string, unknown> | undefined, name: string): unknown {
  if (json === undefined) return undefined;
  if (Object.hasOwn(json, name)) return json[name];
  const key = Object.keys(json).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : json[key];
}

// ---- lego httpreq ----------------------------------------------------------------------

/** `{fqdn: "_acme-challenge.<host>.", value}`, or RAW mode's `{domain, token, keyAuth}` (the value is computed). */
function httpreqAsk(req: AcmeRequest): Ask {
  const json = parseJson(req.body);
  const fqdn = text(json?.fqdn);
  const value = text(json?.value);
  const domain = text(json?.domain);
  const keyAuth = text(json?.keyAuth);
  const credentials = parseBasicAuth(req.headers.authorization);
  // One name: a comma would make a list of hosts, and one status cannot answer for several.
  if ((fqdn ?? domain ?? '').includes(',')) return { invalid: plain(400, 'expected one host name\n') };
  if (fqdn !== undefined && value !== undefined) return { hostname: fqdn, value, credentials };
  if (domain !== undefined && keyAuth !== undefined)
    return { hostname: domain, value: txtValueOfKeyAuthorization(keyAuth), credentials };
  return { invalid: plain(400, 'expected JSON {"fqdn": "_acme-challenge.<host>.", "value": "…"}\n') };
}

/** The update path's reply line as the body; the status says it to lego (2xx: done). */
function httpreqReply(reply: UpdateReply, realm: string): RawReply {
  if (reply.kind === 'request') {
    const status = REQUEST_STATUS[reply.outcome];
    const headers = [
      ...(status === 401 ? [['WWW-Authenticate', `Basic realm="${realm}"`] as const] : []),
      ...retryAfterHeader([reply.outcome]),
    ];
    return { status, body: `${requestReply(reply.outcome).token}\n`, ...(headers.length > 0 ? { headers } : {}) };
  }
  const line = reply.lines[0] ?? { outcome: 'invalid-name' as const };
  const token = hostReply(line.outcome).token;
  const shown = (token === 'good' || token === 'nochg') && line.addresses ? ` ${line.addresses}` : '';
  return withRetryAfter({ status: HOST_STATUS[line.outcome], body: `${token}${shown}\n` }, line.outcome);
}

/** The reply with `Retry-After` when the outcome asks the client to come back later (429, 502, 503). */
function withRetryAfter(reply: RawReply, outcome: HostOutcome | RequestOutcome): RawReply {
  const retry = retryAfterHeader([outcome]);
  return retry.length === 0 ? reply : { ...reply, headers: [...(reply.headers ?? []), ...retry] };
}

// ---- acme-dns --------------------------------------------------------------------------

/** `X-Api-User` (the host, its account or a token id), `X-Api-Key` (a token or the password); `{subdomain, txt}`. */
function acmeDnsAsk(req: AcmeRequest): Ask {
  const user = header(req.headers['x-api-user']);
  const key = header(req.headers['x-api-key']);
  const credentials = apiCredentials(user, key);
  const json = parseJson(req.body);
  const txt = text(field(json, 'txt'));
  const subdomain = text(field(json, 'subdomain'));
  if (json === undefined || txt === undefined) return { invalid: jsonReply(400, { error: 'malformed_json_payload' }) };
  if ((subdomain ?? '').includes(',')) return { invalid: jsonReply(400, { error: 'bad_subdomain' }) };
  // The subdomain names the host; left empty, the user does (a host name as the user).
  const hostname = subdomain !== undefined && subdomain.trim() !== '' ? subdomain : (user ?? '');
  return { hostname, value: txt, credentials };
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** As Basic credentials are read (request.ts): missing, malformed (control characters, too long), or a pair. */
function apiCredentials(user: string | undefined, key: string | undefined): Credentials | 'missing' | 'malformed' {
  if ((user === undefined || user === '') && (key === undefined || key === '')) return 'missing';
  if (!user || key === undefined) return 'malformed';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(user) || user.length > 256 || key.length > MAX_PASSWORD_LENGTH) return 'malformed';
  return { user, password: key };
}

/**
 * As acme-dns answers: 200 `{"txt": "…"}`; 401 `{"error": "forbidden"}` for credentials and a host that is not the
 * login's; 400 `{"error": "bad_txt"}` / `"bad_subdomain"`; otherwise the reply token as the error.
 */
function acmeDnsReply(reply: UpdateReply, value: string, realm: string): RawReply {
  if (reply.kind === 'request') {
    if (reply.outcome === 'bad-credentials') {
      return { ...jsonReply(401, { error: 'forbidden' }), headers: [['WWW-Authenticate', `Basic realm="${realm}"`]] };
    }
    return withRetryAfter(
      jsonReply(REQUEST_STATUS[reply.outcome], { error: requestReply(reply.outcome).token }),
      reply.outcome,
    );
  }
  const outcome = reply.lines[0]?.outcome ?? 'invalid-name';
  switch (outcome) {
    case 'changed':
    case 'unchanged':
      return { status: 200, body: `{"txt": ${JSON.stringify(value)}}`, contentType: 'application/json' };
    case 'unknown-host':
    case 'not-owner':
      return jsonReply(401, { error: 'forbidden' });
    case 'invalid-name':
      return jsonReply(400, { error: 'bad_subdomain' });
    case 'not-dynamic':
      return jsonReply(400, { error: isValidTxtValue(value) ? 'badsys' : 'bad_txt' });
    default:
      return withRetryAfter(jsonReply(HOST_STATUS[outcome], { error: hostReply(outcome).token }), outcome);
  }
}

function jsonReply(status: number, body: { error: string }): RawReply {
  return { status, body: `{"error": ${JSON.stringify(body.error)}}`, contentType: 'application/json' };
}

function plain(status: number, body: string): RawReply {
  return { status, body };
}
