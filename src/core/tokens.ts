/**
 * The reply tokens on the wire: per host name (one line each) or per request (sent once).
 * Which outcome is which token, with its HTTP status, is core/outcomes.ts.
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

/** Account-level results: sent once, not per host name (docs/protocol.md, "The reply"). */
export const REQUEST_TOKENS = ['badauth', 'badagent', 'numhost', '911'] as const;

export type HostToken = (typeof HOST_TOKENS)[number];
export type RequestToken = (typeof REQUEST_TOKENS)[number];
export type Token = HostToken | RequestToken;

/** Tokens that carry the address(es) set by the request after one space. */
export function tokenCarriesAddress(token: Token): token is 'good' | 'nochg' {
  return token === 'good' || token === 'nochg';
}
