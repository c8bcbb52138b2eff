/**
 * Password hashing with scrypt (node:crypto, async: runs on the libuv pool), in a
 * self-describing format so the cost can be raised later without breaking stored hashes:
 *
 *   $scrypt$ln=15,r=8,p=1$<salt base64>$<hash base64>     (N = 2^ln, base64 unpadded)
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { MAX_SCRYPT_COST } from '../core/accounts.js';

export interface ScryptCost {
  /** log2 of N (CPU/memory cost). */
  ln: number;
  /** Block size. */
  r: number;
  /** Parallelisation. */
  p: number;
}

/** ≈32 MiB and tens of milliseconds per hash: the interactive-login recommendation. */
/** What `account add` writes; import-all refuses a stored hash that asks for more (core/accounts.ts). */
export const DEFAULT_SCRYPT_COST: Readonly<ScryptCost> = MAX_SCRYPT_COST;

const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Bounds on what a stored hash may ask for: a tampered record must not exhaust memory. */
const MAX_LN = 20;
const MAX_R = 32;
const MAX_P = 16;
const MAX_MEMORY_BYTES = 512 * 1024 * 1024;

const FORMAT =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,3}),p=(\d{1,3})\$([A-Za-z0-9+/]{16,}={0,2})\$([A-Za-z0-9+/]{16,}={0,2})$/;

interface ParsedHash {
  cost: ScryptCost;
  salt: Buffer;
  hash: Buffer;
}

export async function hashPassword(password: string, cost: ScryptCost = DEFAULT_SCRYPT_COST): Promise<string> {
  checkCost(cost);
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, cost);
  return `$scrypt$ln=${cost.ln},r=${cost.r},p=${cost.p}$${b64(salt)}$${b64(hash)}`;
}

/**
 * True when `password` matches `stored`. A stored value in an unknown or out-of-bounds
 * format never matches (use isPasswordHash to validate one).
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (parsed === undefined) return false;
  const candidate = await derive(password, parsed.salt, parsed.hash.length, parsed.cost);
  return timingSafeEqual(candidate, parsed.hash);
}

/** True for a string in the format hashPassword produces, with acceptable parameters. */
export function isPasswordHash(stored: string): boolean {
  return parsePasswordHash(stored) !== undefined;
}

/** The cost parameters of a stored hash (e.g. to decide on re-hashing), or undefined. */
export function passwordHashCost(stored: string): ScryptCost | undefined {
  return parsePasswordHash(stored)?.cost;
}

function parsePasswordHash(stored: string): ParsedHash | undefined {
  const m = FORMAT.exec(stored);
  if (m === null) return undefined;
  const cost = { ln: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (!costIsAcceptable(cost)) return undefined;
  const salt = Buffer.from(m[4]!, 'base64');
  const hash = Buffer.from(m[5]!, 'base64');
  if (salt.length < 8 || hash.length < 16 || hash.length > 64) return undefined;
  return { cost, salt, hash };
}

function costIsAcceptable(c: ScryptCost): boolean {
  return (
    Number.isInteger(c.ln) &&
    c.ln >= 1 &&
    c.ln <= MAX_LN &&
    Number.isInteger(c.r) &&
    c.r >= 1 &&
    c.r <= MAX_R &&
    Number.isInteger(c.p) &&
    c.p >= 1 &&
    c.p <= MAX_P &&
    memoryNeeded(c) <= MAX_MEMORY_BYTES
  );
}

function checkCost(c: ScryptCost): void {
  if (!costIsAcceptable(c)) {
    throw new RangeError(`scrypt cost out of range: ln=${c.ln},r=${c.r},p=${c.p}`);
  }
}

/** scrypt needs about 128·N·r bytes (plus 128·r·p); Node refuses past `maxmem`. */
function memoryNeeded(c: ScryptCost): number {
  return 128 * 2 ** c.ln * c.r + 128 * c.r * c.p;
}

function derive(password: string, salt: Buffer, length: number, c: ScryptCost): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** c.ln, r: c.r, p: c.p, maxmem: memoryNeeded(c) + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

function b64(buf: Buffer): string {
  return buf.toString('base64').replace(/=+$/, '');
}
