/**
 * Gateway TSIG keys (docs/security.md, "Gateway keys"): a key's secret is derived from the
 * gateway's master secret (`gateway.keyFile`) and the key's id, never stored. Revoking a key
 * removes its id; a backup holds nothing secret; a new master secret changes every key.
 */
import { hkdfSync } from 'node:crypto';
import { TSIG_MAC_LENGTHS, type TsigAlgorithm, type TsigKeyConfig } from '../core/tsig.js';
import { tokenHash } from './update-token.js';

/** HKDF's info: names the purpose, the id and the algorithm, so no two keys share a secret. */
const INFO_PREFIX = 'ddns-bridge gateway tsig v1';

/** The name a key is known by: its id, then its host (`3f2a9c0d1e4b.home.example.org`). */
export function tsigKeyName(id: string, fqdn: string): string {
  return `${id}.${fqdn}`;
}

/** The id a key name starts with (12 hex digits), or undefined. */
export function tsigKeyId(keyName: string): string | undefined {
  const m = /^([0-9a-f]{12})\./i.exec(keyName);
  return m ? m[1]!.toLowerCase() : undefined;
}

/**
 * The hash a key's record is stored under: the token index's keyed hash of a text no HTTP token can be (a token is
 * 32 base64url characters), so an HTTP login never finds a gateway key, and the gateway never an HTTP token.
 */
export function tsigKeyHash(id: string): string {
  return tokenHash(`tsig:${id.toLowerCase()}`);
}

/** Derives keys from one master secret. */
export class TsigKeyring {
  constructor(private readonly master: Buffer) {
    if (master.length < 32) throw new Error('the gateway master secret must be at least 32 bytes');
  }

  /** The key's secret: HKDF-SHA256(master, id, algorithm), as long as the algorithm's MAC. */
  secret(id: string, algorithm: TsigAlgorithm): Buffer {
    const info = `${INFO_PREFIX} ${id.toLowerCase()} ${algorithm}`;
    return Buffer.from(hkdfSync('sha256', this.master, Buffer.alloc(0), info, TSIG_MAC_LENGTHS[algorithm]));
  }

  /** The whole key, as a client configures it. */
  key(id: string, fqdn: string, algorithm: TsigAlgorithm): TsigKeyConfig {
    return { name: tsigKeyName(id, fqdn), algorithm, secret: this.secret(id, algorithm) };
  }
}
