/**
 * The outcome → reply map of the update protocol
 * (docs/architecture.md, "Where a reply token is chosen"). The store, the use cases and the
 * HTTP adapter speak in outcomes; this table says which token each one is on the wire, its HTTP
 * status, and whether it counts as junk. The ACME client APIs answer the same outcomes with
 * statuses of their own (src/http/acme.ts, HOST_STATUS and REQUEST_STATUS).
 */
import { DnsUpdateError } from './errors.js';
import type { HostToken, RequestToken, Token } from './tokens.js';

/** What happened to one host name of a request. */
export type HostOutcome =
  | 'changed'
  | 'unchanged'
  | 'invalid-name'
  | 'unknown-host'
  | 'not-owner'
  | 'not-dynamic'
  | 'closed'
  | 'abuse'
  | 'offline-not-allowed'
  | 'dns-failed';

/** What happened to the request as a whole (answered once, not per host). */
export type RequestOutcome = 'bad-agent' | 'bad-credentials' | 'too-many-hosts' | 'unavailable';

/** What the address echo can answer instead of the address. */
export type EchoOutcome = 'abuse' | 'unavailable';

export type Outcome = HostOutcome | RequestOutcome | EchoOutcome;

interface Entry<T extends Token> {
  token: T;
  /** 401 comes with a Basic challenge. */
  status: 200 | 401;
  /** The client sent something wrong or is not allowed: counts towards its junk block. */
  junk: boolean;
}

const HOST: { readonly [O in HostOutcome]: Entry<HostToken> } = {
  changed: { token: 'good', status: 200, junk: false },
  unchanged: { token: 'nochg', status: 200, junk: false },
  'invalid-name': { token: 'notfqdn', status: 200, junk: true },
  'unknown-host': { token: 'nohost', status: 200, junk: true },
  'not-owner': { token: '!yours', status: 200, junk: true },
  'not-dynamic': { token: 'badsys', status: 200, junk: true },
  closed: { token: '!active', status: 200, junk: false },
  abuse: { token: 'abuse', status: 200, junk: false },
  'offline-not-allowed': { token: '!donator', status: 200, junk: false },
  // Our fault (or the primary's): never the client's junk.
  'dns-failed': { token: 'dnserr', status: 200, junk: false },
};

const REQUEST: { readonly [O in RequestOutcome]: Entry<RequestToken> } = {
  'bad-agent': { token: 'badagent', status: 200, junk: false },
  'bad-credentials': { token: 'badauth', status: 401, junk: true },
  'too-many-hosts': { token: 'numhost', status: 200, junk: true },
  unavailable: { token: '911', status: 200, junk: false },
};

export function hostReply(outcome: HostOutcome): Entry<HostToken> {
  return HOST[outcome];
}

export function requestReply(outcome: RequestOutcome | EchoOutcome): Entry<Token> {
  return outcome === 'abuse' ? HOST.abuse : REQUEST[outcome];
}

export function isJunk(outcome: Outcome): boolean {
  return outcome in HOST ? HOST[outcome as HostOutcome].junk : REQUEST[outcome as RequestOutcome].junk;
}

/** The outcome of an error that reached a request: a DNS failure, else the service's own (911). */
export function outcomeOfError(err: unknown): 'dns-failed' | 'unavailable' {
  return err instanceof DnsUpdateError ? 'dns-failed' : 'unavailable';
}

/**
 * `Retry-After` (seconds) of an answer that tells a client to come back later (docs/protocol.md, "Retry-After"):
 * 911 and dnserr a short delay, jittered so clients that failed together do not return together; abuse an hour (a
 * blocked host waits for the operator, the ACME limit's window is an hour by default). undefined: no header. The
 * outcome alone decides, so a right and a wrong password get the same header wherever they get the same token.
 */
export function retryAfterSeconds(outcome: Outcome, random: () => number = Math.random): number | undefined {
  if (outcome === 'unavailable' || outcome === 'dns-failed')
    return TRANSIENT_RETRY_S + Math.floor(random() * TRANSIENT_JITTER_S);
  return outcome === 'abuse' ? ABUSE_RETRY_S : undefined;
}

/** 911 and dnserr: 10 s, plus up to 10 s of jitter. */
export const TRANSIENT_RETRY_S = 10;
export const TRANSIENT_JITTER_S = 10;
/** abuse (and the ACME APIs' 429): an hour. */
export const ABUSE_RETRY_S = 3600;

/** The longest Retry-After of these outcomes (a reply of several hosts), or undefined. */
export function retryAfterOf(outcomes: readonly Outcome[], random: () => number = Math.random): number | undefined {
  let longest: number | undefined;
  for (const o of outcomes) {
    const s = retryAfterSeconds(o, random);
    if (s !== undefined && (longest === undefined || s > longest)) longest = s;
  }
  return longest;
}
