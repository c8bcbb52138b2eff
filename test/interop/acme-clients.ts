/**
 * The ACME DNS-01 recipes of docs/clients.md ("Certificates (ACME DNS-01)") as the tests run
 * them: lego's httpreq, acme-dns and rfc2136 providers, certbot's manual hooks and its
 * dns-rfc2136 plugin, against a lab pebble. Secrets go into mode-0600 files or the client's
 * environment, never into argv.
 */
import { X509Certificate } from 'node:crypto';
import { chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writePrivateFile, type Pebble } from '../../src/lab/index.js';
import { runProcess, type ProcResult } from './support.js';

/** An issuance takes seconds with PEBBLE_VA_NOSLEEP; lego asks again for an authorization not yet valid after 5 s. */
const CLIENT_TIMEOUT_MS = 90_000;

// ---- lego 4.9 ---------------------------------------------------------------------------

export interface LegoRun {
  /** lego's --path: account, keys, certificates/. */
  dir: string;
  pebble: Pebble;
  /** The lab primary: lego looks up CNAMEs and (with --dns.disable-cp) the TXT record there. */
  nameserverPort: number;
  email: string;
  domains: string[];
  provider: 'httpreq' | 'acme-dns' | 'rfc2136';
  env: Record<string, string>;
}

/**
 * lego sleeps its provider's polling interval (2 s) before it checks propagation, even with
 * --dns.disable-cp, once per name: none in the lab (about 4 s of every H and *.H run). Its
 * acme-dns provider has no such setting (`lego dnshelp -c acme-dns`).
 */
const POLLING_INTERVAL: Partial<Record<LegoRun['provider'], string>> = {
  httpreq: 'HTTPREQ_POLLING_INTERVAL',
  rfc2136: 'RFC2136_POLLING_INTERVAL',
};

/**
 * `lego … run` as docs/clients.md shows it, plus what the lab needs: pebble's directory and
 * HTTPS CA, the lab primary as resolver, no wait for propagation to the zone's NS records
 * (they name no real server here) and no polling interval before the check it skips.
 */
export function runLego(o: LegoRun): Promise<ProcResult> {
  const args = [
    '--path',
    o.dir,
    '--server',
    o.pebble.directoryUrl,
    '--accept-tos',
    '--email',
    o.email,
    '--dns',
    o.provider,
    '--dns.resolvers',
    `127.0.0.1:${o.nameserverPort}`,
    '--dns.disable-cp',
    ...o.domains.flatMap((d) => ['--domains', d]),
    'run',
  ];
  return runProcess('lego', args, {
    cwd: o.dir,
    env: {
      ...(POLLING_INTERVAL[o.provider] === undefined ? {} : { [POLLING_INTERVAL[o.provider]!]: '0' }),
      ...o.env,
      LEGO_CA_CERTIFICATES: o.pebble.tlsCaFile,
    },
    timeoutMs: CLIENT_TIMEOUT_MS,
  });
}

/** The httpreq provider's environment: `BRIDGE` is the base URL, e.g. `http://127.0.0.1:8245`. */
export function httpreqEnv(bridge: string, user: string, password: string): Record<string, string> {
  return {
    HTTPREQ_ENDPOINT: `${bridge}/acme`,
    HTTPREQ_USERNAME: user,
    HTTPREQ_PASSWORD: password,
  };
}

/** A TSIG key of the RFC 2136 gateway, as `token add H --tsig` prints it. */
export interface GatewayKey {
  name: string;
  /** As printed, e.g. `hmac-sha256`. */
  algorithm: string;
  secret: string;
}

/**
 * The rfc2136 provider's environment for the gateway at `nameserver` (`HOST:PORT`). lego wants the
 * algorithm as miekg/dns names it, with the trailing dot; without RFC2136_TSIG_* it does not sign.
 */
export function rfc2136Env(nameserver: string, key: GatewayKey): Record<string, string> {
  return {
    RFC2136_NAMESERVER: nameserver,
    RFC2136_TSIG_KEY: key.name,
    RFC2136_TSIG_SECRET: key.secret,
    RFC2136_TSIG_ALGORITHM: `${key.algorithm}.`,
  };
}

/** One account of an acme-dns client's storage file (lego's ACME_DNS_STORAGE_PATH, goacmedns). */
export interface AcmeDnsAccount {
  fulldomain: string;
  subdomain: string;
  username: string;
  password: string;
  server_url: string;
}

/**
 * The storage file that lets lego's acme-dns provider use the bridge: one entry per name to
 * certify (lego looks up the name without `*.`), so it never tries to register an account.
 */
export function acmeDnsStorage(bridge: string, host: string, user: string, token: string): string {
  const account: AcmeDnsAccount = {
    fulldomain: `_acme-challenge.${host}`,
    subdomain: host,
    username: user,
    password: token,
    server_url: bridge,
  };
  return JSON.stringify({ [host]: account }, null, 2) + '\n';
}

/**
 * Whether this lego has the acme-dns provider: Debian 12's lego 4.9.1 is built without it
 * (debian/rules leaves out the providers whose Go libraries Debian lacks, goacmedns among them).
 */
export function legoLacksAcmeDns(result: ProcResult): boolean {
  return /unrecognized DNS provider: acme-dns/.test(result.output);
}

/** Where lego writes the certificate of a run whose first domain is `host`. */
export function legoCertificateFile(dir: string, host: string): string {
  return path.join(dir, 'certificates', `${host}.crt`);
}

// ---- certbot 2.1 --------------------------------------------------------------------------

/**
 * certbot's --manual-auth-hook: publishes CERTBOT_VALIDATION at `_acme-challenge.<host>`
 * through the update endpoint. The login comes from a netrc file (never argv). A certificate
 * for a name and its wildcard runs it twice for the same host: the bridge keeps both values.
 */
export const CERTBOT_AUTH_HOOK = `#!/bin/sh
# certbot --manual-auth-hook: the DNS-01 value as a TXT record through ddns-bridge.
set -eu
BRIDGE=\${BRIDGE:-https://ddns.example.org}
NETRC=\${NETRC:-/etc/letsencrypt/ddns-bridge.netrc}
reply=$(curl -sS --netrc-file "$NETRC" -A 'certbot-hook/1.0' \\
  "$BRIDGE/dyndns/update?hostname=\${CERTBOT_DOMAIN#\\*.}&txt=$CERTBOT_VALIDATION")
case "$reply" in good*|nochg*) ;; *) echo "ddns-bridge: $reply" >&2; exit 1 ;; esac
`;

/** certbot's --manual-cleanup-hook: `txt=V&clear=true` removes that value, the other name's stays. */
export const CERTBOT_CLEANUP_HOOK = `#!/bin/sh
# certbot --manual-cleanup-hook: remove the DNS-01 value again.
set -eu
BRIDGE=\${BRIDGE:-https://ddns.example.org}
NETRC=\${NETRC:-/etc/letsencrypt/ddns-bridge.netrc}
reply=$(curl -sS --netrc-file "$NETRC" -A 'certbot-hook/1.0' \\
  "$BRIDGE/dyndns/update?hostname=\${CERTBOT_DOMAIN#\\*.}&txt=$CERTBOT_VALIDATION&clear=true")
case "$reply" in good*|nochg*) ;; *) echo "ddns-bridge: $reply" >&2; exit 1 ;; esac
`;

/**
 * certbot's --manual-auth-hook for the acme-dns API (what an acme-dns client sends): the
 * X-Api-User and X-Api-Key header lines come from a file (never argv). acme-dns has no cleanup.
 */
export const CERTBOT_ACME_DNS_HOOK = `#!/bin/sh
# certbot --manual-auth-hook: the DNS-01 value through the acme-dns API of ddns-bridge.
set -eu
BRIDGE=\${BRIDGE:-https://ddns.example.org}
HEADERS=\${HEADERS:-/etc/letsencrypt/ddns-bridge.headers}
curl -fsS -H @"$HEADERS" -H 'Content-Type: application/json' \\
  --data "{\\"subdomain\\": \\"\${CERTBOT_DOMAIN#\\*.}\\", \\"txt\\": \\"$CERTBOT_VALIDATION\\"}" "$BRIDGE/update"
`;

/**
 * The dns-rfc2136 plugin's credentials file (mode 0600) for the gateway at `address` (an IP
 * address: the plugin takes no host name). The algorithm must be upper case: the plugin
 * validates it case-insensitively but looks it up as written, and signs with HMAC-MD5 when the
 * lookup fails, as it does when the line is left out.
 */
export function certbotRfc2136Ini(address: string, port: number | string, key: GatewayKey): string {
  return [
    `dns_rfc2136_server = ${address}`,
    `dns_rfc2136_port = ${port}`,
    `dns_rfc2136_name = ${key.name}`,
    `dns_rfc2136_secret = ${key.secret}`,
    `dns_rfc2136_algorithm = ${key.algorithm.toUpperCase()}`,
    '',
  ].join('\n');
}

/** The options of certbot's dns-rfc2136 plugin, after `certonly`. */
export function certbotRfc2136Args(credentials: string, propagationSeconds: number): string[] {
  return [
    '--dns-rfc2136',
    '--dns-rfc2136-credentials',
    credentials,
    '--dns-rfc2136-propagation-seconds',
    String(propagationSeconds),
  ];
}

export interface CertbotRun {
  /** Holds certbot's config, work and logs directories and the hooks. */
  dir: string;
  pebble: Pebble;
  domains: string[];
  authHook: string;
  /** None for acme-dns, which removes nothing. */
  cleanupHook?: string;
  /** What the hooks read (BRIDGE, NETRC, …). */
  env: Record<string, string>;
}

/** `certbot certonly` against pebble, non-interactive, every directory in `dir`; `plugin`: its options. */
function runCertbotWith(
  o: { dir: string; pebble: Pebble; domains: string[]; env: Record<string, string> },
  plugin: string[],
): Promise<ProcResult> {
  const args = [
    'certonly',
    ...plugin,
    '--server',
    o.pebble.directoryUrl,
    '--non-interactive',
    '--agree-tos',
    '--register-unsafely-without-email',
    '--config-dir',
    path.join(o.dir, 'config'),
    '--work-dir',
    path.join(o.dir, 'work'),
    '--logs-dir',
    path.join(o.dir, 'logs'),
    ...o.domains.flatMap((d) => ['-d', d]),
  ];
  return runProcess('certbot', args, {
    cwd: o.dir,
    env: { ...o.env, REQUESTS_CA_BUNDLE: o.pebble.tlsCaFile },
    timeoutMs: CLIENT_TIMEOUT_MS,
  });
}

export interface CertbotRfc2136Run {
  /** Holds certbot's config, work and logs directories and the credentials file. */
  dir: string;
  pebble: Pebble;
  domains: string[];
  /** The credentials file's text (certbotRfc2136Ini). */
  ini: string;
  propagationSeconds: number;
}

/** `certbot certonly --dns-rfc2136` with the credentials in `dir`/rfc2136.ini (mode 0600). */
export async function runCertbotRfc2136(o: CertbotRfc2136Run): Promise<ProcResult> {
  const credentials = path.join(o.dir, 'rfc2136.ini');
  await writePrivateFile(credentials, o.ini);
  return runCertbotWith({ ...o, env: {} }, certbotRfc2136Args(credentials, o.propagationSeconds));
}

/** `certbot certonly --manual` with the two hooks, non-interactive, every directory in `dir`. */
export async function runCertbot(o: CertbotRun): Promise<ProcResult> {
  const auth = path.join(o.dir, 'auth-hook.sh');
  const cleanup = path.join(o.dir, 'cleanup-hook.sh');
  for (const [file, text] of [
    [auth, o.authHook],
    [cleanup, o.cleanupHook],
  ] as const) {
    if (text === undefined) continue;
    await writePrivateFile(file, text);
    await chmod(file, 0o700);
  }
  return runCertbotWith(o, [
    '--manual',
    '--preferred-challenges',
    'dns',
    '--manual-auth-hook',
    auth,
    ...(o.cleanupHook === undefined ? [] : ['--manual-cleanup-hook', cleanup]),
  ]);
}

/** certbot's copy of the certificate of lineage `host` (cert.pem: the leaf alone). */
export function certbotCertificateFile(dir: string, host: string): string {
  return path.join(dir, 'config', 'live', host, 'cert.pem');
}

// ---- checking what was issued ---------------------------------------------------------------

export interface Issued {
  /** DNS names of the subjectAltName, sorted. */
  names: string[];
  /** `openssl verify` against pebble's issuing root and intermediate: `<file>: OK`. */
  verify: ProcResult;
}

/** The leaf certificate (first PEM block of `file`), its names and whether it chains to pebble's root. */
export async function inspectCertificate(file: string, pebble: Pebble, scratch: string): Promise<Issued> {
  const pem = await readFile(file, 'utf8');
  const leafPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(pem)?.[0];
  if (!leafPem) throw new Error(`no certificate in ${file}`);
  const leaf = new X509Certificate(leafPem);
  const names = (leaf.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4))
    .sort();
  const root = path.join(scratch, 'pebble-root.pem');
  const intermediate = path.join(scratch, 'pebble-intermediate.pem');
  const leafFile = path.join(scratch, 'leaf.pem');
  await writePrivateFile(root, await pebble.issuingRoot());
  await writePrivateFile(intermediate, await pebble.issuingIntermediate());
  await writePrivateFile(leafFile, leafPem);
  const verify = await runProcess('openssl', ['verify', '-CAfile', root, '-untrusted', intermediate, leafFile]);
  return { names, verify };
}
