/**
 * The reply-token catalog: every token the service can answer, whether it is
 * per request (sent once) or per host name (one line each), and its HTTP status.
 * This is the only place that maps an outcome to the wire semantics; the HTTP
 * adapter turns these into bytes.
 */

export const HOST_TOKENS = [
  'good',
  'nochg',
  'notfqdn',
  'nohost',
  '!yours',
  'badsys',
  '!active',
  'abuse',
  '!donator',
  'dnserr',
] as const;

/** Account-level results: sent once, not per host name (SPEC §3). */
export const REQUEST_TOKENS = ['badauth', 'badagent', 'numhost', '911'] as const;

export type HostToken = (typeof HOST_TOKENS)[number];
export type RequestToken = (typeof REQUEST_TOKENS)[number];
export type Token = HostToken | RequestToken;

/** Tokens that carry the address(es) set by the request after one space. */
export function tokenCarriesAddress(token: Token): token is 'good' | 'nochg' {
  return token === 'good' || token === 'nochg';
}

/** HTTP status for a token: 200 for every token except a credential failure (401 + challenge). */
export function httpStatusForToken(token: Token): 200 | 401 {
  return token === 'badauth' ? 401 : 200;
}

/**
 * Tokens that mean "the client sent something wrong or is not allowed": they count
 * towards the junk threshold of (source address, User-Agent). Our own failures
 * (911, dnserr) and successes never do.
 */
export function tokenIsJunk(token: Token): boolean {
  switch (token) {
    case 'notfqdn':
    case 'nohost':
    case '!yours':
    case 'badsys':
    case 'numhost':
    case 'badauth':
      return true;
    default:
      return false;
  }
}

