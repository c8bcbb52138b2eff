/**
 * Making and hashing update tokens. A token is 192 random bits, so it needs no slow hash:
 * the store keeps its HMAC-SHA256 (docs/security.md, "Update tokens"), which nobody can turn
 * back into the token, and the login finds the record by that hash.
 */
import { createHmac, randomBytes } from 'node:crypto';

/**
 * The HMAC key. Fixed, not a per-deployment secret: a 192-bit random token cannot be guessed
 * from its hash, and a fixed key keeps backups and every frontend interchangeable. It keeps
 * these hashes apart from any other SHA-256 of the same text.
 */
const TOKEN_HASH_KEY = 'ddns-bridge update token v1';

/** A new token: 24 random bytes as 32 base64url characters (core TOKEN_PATTERN). */
export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/** A new token id: 12 hex digits (core TOKEN_ID_PATTERN). */
export function newTokenId(): string {
  return randomBytes(6).toString('hex');
}

/** The keyed hash the store keeps and finds a token by (43 base64url characters). */
export function tokenHash(token: string): string {
  return createHmac('sha256', TOKEN_HASH_KEY).update(token).digest('base64url');
}
