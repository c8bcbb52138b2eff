/** TSIG keys for the lab servers and for nsupdate key files. */
import { randomBytes } from 'node:crypto';
import type { TsigAlgorithm } from '../config/schema.js';
import { writePrivateFile } from './files.js';

export interface TsigKey {
  name: string;
  algorithm: TsigAlgorithm;
  /** base64 */
  secret: string;
}

const DIGEST_BYTES: Record<TsigAlgorithm, number> = {
  'hmac-sha1': 20,
  'hmac-sha224': 28,
  'hmac-sha256': 32,
  'hmac-sha384': 48,
  'hmac-sha512': 64,
};

/** A fresh random key; the secret is as long as the algorithm's digest (what tsig-keygen does). */
export function generateTsigKey(name = 'ddns-key', algorithm: TsigAlgorithm = 'hmac-sha256'): TsigKey {
  return { name, algorithm, secret: randomBytes(DIGEST_BYTES[algorithm]).toString('base64') };
}

/** The key as a BIND `key` statement (what `tsig-keygen` prints; `nsupdate -k FILE` reads it). */
export function bindKeyText(key: TsigKey): string {
  return `key "${key.name}" {\n\talgorithm ${key.algorithm};\n\tsecret "${key.secret}";\n};\n`;
}

/** Write the key in BIND format to `file`, mode 0600, so tools get it without argv. */
export async function writeKeyFile(file: string, key: TsigKey): Promise<string> {
  await writePrivateFile(file, bindKeyText(key));
  return file;
}
