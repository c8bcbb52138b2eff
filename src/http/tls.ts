/**
 * The certificate of an HTTPS listener: a PEM certificate (chain allowed, the server's own
 * first) and its PEM private key, read from files, checked to belong together, and summed
 * up for logs and `check`. Errors name the setting and the file, never the key's content.
 */
import { readFile } from 'node:fs/promises';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import tls from 'node:tls';
import { ConfigError } from '../core/errors.js';

/** TLS 1.0 and 1.1 are refused; node's default maximum is TLS 1.3. */
export const TLS_MIN_VERSION = 'TLSv1.2';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** The files of one listener and the setting that names them (`listen[1].tls`), for errors and logs. */
export interface TlsListenerFiles extends TlsFiles {
  setting: string;
}

export interface TlsPair {
  /** What node's TLS server takes: the PEM texts as read. */
  secureContext: tls.SecureContextOptions;
  /** The server's own certificate (the first of the chain). */
  leaf: X509Certificate;
}

/** What logs and `check` say about a certificate (nothing secret in it). */
export interface CertificateSummary {
  subject: string;
  issuer: string;
  serial: string;
  notAfter: string;
  sha256: string;
}

/** Read and check one listener's certificate and key; a ConfigError naming the setting when they do not work. */
export async function readTlsPair(files: TlsListenerFiles): Promise<TlsPair> {
  const certKey = `${files.setting}.certFile`;
  const keyKey = `${files.setting}.keyFile`;
  const cert = await readPem(files.certFile, certKey);
  const key = await readPem(files.keyFile, keyKey);
  const leaf = parseCertificate(cert, files.certFile, certKey);
  const privateKey = parsePrivateKey(key, files.keyFile, keyKey);
  if (!leaf.checkPrivateKey(privateKey)) {
    const subject = leaf.subject.replace(/\n/g, ', ');
    const which = `the certificate in ${files.certFile} (${subject})`;
    throw new ConfigError(keyKey, `${files.keyFile} is not the key of ${which}`);
  }
  const secureContext: tls.SecureContextOptions = { cert, key, minVersion: TLS_MIN_VERSION };
  try {
    // What the server will do with them: a chain OpenSSL cannot use fails here, not at a handshake.
    tls.createSecureContext(secureContext);
  } catch (err) {
    const why = (err as Error).message;
    throw new ConfigError(files.setting, `OpenSSL refuses ${files.certFile} with ${files.keyFile} (${why})`);
  }
  return { secureContext, leaf };
}

export function summarize(leaf: X509Certificate): CertificateSummary {
  return {
    subject: leaf.subject.replace(/\n/g, ', '),
    issuer: leaf.issuer.replace(/\n/g, ', '),
    serial: leaf.serialNumber,
    notAfter: new Date(leaf.validTo).toISOString(),
    sha256: leaf.fingerprint256,
  };
}

/** Whole days (rounded down) until the certificate expires; negative once it has. */
export function daysLeft(leaf: X509Certificate, now: Date): number {
  return Math.floor((new Date(leaf.validTo).getTime() - now.getTime()) / 86_400_000);
}

async function readPem(file: string, setting: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError(setting, `cannot read ${file} (${why})`);
  }
}

function parseCertificate(pem: Buffer, file: string, setting: string): X509Certificate {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(setting, `${file} holds no PEM certificate`);
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new ConfigError(setting, `${file} holds no valid PEM certificate (${(err as Error).message})`);
  }
}

function parsePrivateKey(pem: Buffer, file: string, setting: string): KeyObject {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem.toString('latin1'))) {
    throw new ConfigError(setting, `${file} holds no PEM private key`);
  }
  try {
    return createPrivateKey(pem);
  } catch (err) {
    // The messages of node and OpenSSL name the failure, never the key's bytes.
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MISSING_PASSPHRASE') {
      throw new ConfigError(setting, `${file} holds an encrypted key: give it unencrypted (mode 0600)`);
    }
    throw new ConfigError(setting, `${file} holds no usable private key (${e.message})`);
  }
}
