/**
 * Scoped update tokens (pure): what a token is, what an operator may set on one, and the
 * checks made against the request that uses it. A token updates one host; it is stored only
 * as a hash (see docs/security.md, "Update tokens").
 */
import { checkCidr, cidrContains, parseCidr } from './addresses.js';
import type { TsigAlgorithm } from './tsig.js';

/** A token as handed out: 24 random bytes in base64url (192 bits, 32 URL-safe characters). */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32}$/;

/** A token id: 12 lowercase hex digits (random; shown by `token list`, never a secret). */
export const TOKEN_ID_PATTERN = /^[0-9a-f]{12}$/;

/** Longest `--note` kept. */
export const MAX_TOKEN_NOTE = 200;

/** Most `--from` blocks on one token. */
export const MAX_TOKEN_SOURCES = 16;

/** A stored token as the operator sees it (never the token itself). */
export interface TokenRecord {
  id: string;
  fqdn: string;
  /** The account that owns the host (and so the token). */
  account: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** null: never expires. */
  expiresAt: number | null;
  /** null: never used. */
  lastUsedAt: number | null;
  /** Source blocks the token may be used from (CIDR text); empty: anywhere. */
  from: readonly string[];
  note: string;
  /** It may set and clear the host's ACME TXT values and nothing else (`--acme-only`). */
  acmeOnly: boolean;
  /**
   * A TSIG key of the RFC 2136 gateway (`token add --tsig`): its algorithm. The secret is derived from the gateway's
   * master secret and the id, never stored (docs/security.md, "Gateway keys"). null: an HTTP update token.
   */
  tsig: TsigAlgorithm | null;
}

/** What `token add` asks for, validated. */
export interface TokenRequest {
  fqdn: string;
  /** Milliseconds from now; undefined: never expires. */
  expiresInMs?: number;
  from: readonly string[];
  note: string;
  acmeOnly?: boolean;
  tsig?: TsigAlgorithm;
}

/** Whether a password is shaped like a token (only those are looked up as tokens). */
export function looksLikeToken(password: string): boolean {
  return TOKEN_PATTERN.test(password);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `90s`, `45m`, `12h`, `30d`, `8w` → milliseconds; undefined when not of that form or zero. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d{1,6})([smhdw])$/.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms > 0 ? ms : undefined;
}

/**
 * `--from` as CIDR blocks (`192.0.2.0/24,2001:db8::/48`, a bare address is a /32 or /128),
 * normalised to `address/prefix`; or the reason it is not valid.
 */
export function parseSourceList(text: string): { from: string[] } | { problem: string } {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) return { problem: 'expected one or more CIDR blocks, e.g. 192.0.2.0/24,2001:db8::/48' };
  if (items.length > MAX_TOKEN_SOURCES) return { problem: `at most ${MAX_TOKEN_SOURCES} CIDR blocks` };
  const from: string[] = [];
  for (const item of items) {
    const cidr = checkCidr(item);
    if ('problem' in cidr) return cidr;
    from.push(item.includes('/') ? item : `${item}/${cidr.family === 4 ? 32 : 128}`);
  }
  return { from };
}

/** A note is printable text without control characters, at most MAX_TOKEN_NOTE characters. */
export function noteProblem(note: string): string | undefined {
  if (note.length > MAX_TOKEN_NOTE) return `at most ${MAX_TOKEN_NOTE} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(note)) return 'no control characters';
  return undefined;
}

/** Whether `address` lies in one of the stored blocks (`from` empty: anywhere; one that no longer parses: never). */
export function sourceAllowed(from: readonly string[], address: string): boolean {
  if (from.length === 0) return true;
  const blocks = from.map((text) => parseCidr(text));
  return blocks.every((b) => b !== undefined) && blocks.some((b) => cidrContains(b, address));
}
