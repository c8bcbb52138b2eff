/** Input limits shared by the HTTP side and the command line. */

/**
 * The longest password (in UTF-16 code units, as JavaScript counts a string) an update may
 * carry: a longer one makes the Authorization header malformed, so the CLI refuses to set it.
 */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * How often node checks a listener's header and request timeouts (its default is 30 s, so a
 * slow client would keep its connection that much past them): a quarter of the shorter
 * timeout, between 0.1 and 1 s. Both HTTP listeners use it.
 */
export function connectionsCheckingInterval(headersTimeoutMs: number, requestTimeoutMs: number): number {
  return Math.max(100, Math.min(1000, Math.min(headersTimeoutMs, requestTimeoutMs) / 4));
}
