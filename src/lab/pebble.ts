/**
 * A private pebble (Let's Encrypt's test ACME CA, Debian package `pebble`) on loopback: its
 * own HTTPS certificate made with openssl in the given directory, DNS-01 validation asked of
 * the lab primary (`-dnsserver`), no random validation delay and no rejected nonces, so an
 * issuance takes seconds. Pebble forgets everything when it stops, its CA included.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireBinary } from './binaries.js';
import { freePort, writePrivateFile } from './files.js';
import { onFreePort, ServerProcess } from './process.js';

const run = promisify(execFile);
const HOST = '127.0.0.1';

export interface Pebble {
  host: string;
  /** The ACME listener (HTTPS). */
  port: number;
  /** The management listener (HTTPS): the issuing CA's root and intermediate. */
  managementPort: number;
  /** `https://127.0.0.1:PORT/dir`, what an ACME client's `--server` takes. */
  directoryUrl: string;
  /**
   * PEM of the CA that signed pebble's own HTTPS certificate: what a client trusts to talk to
   * pebble (lego's LEGO_CA_CERTIFICATES, certbot's REQUESTS_CA_BUNDLE). Not the issuing CA.
   */
  tlsCaFile: string;
  dir: string;
  /** The root that signs what this pebble issues (new at every start). */
  issuingRoot(): Promise<string>;
  /** The intermediate between that root and the issued certificates. */
  issuingIntermediate(): Promise<string>;
  stop(): Promise<void>;
}

export interface PebbleOptions {
  dir: string;
  /** Where pebble's VA asks for the `_acme-challenge` TXT records (UDP): the lab primary. */
  dnsServer: { host?: string; port: number };
  port?: number;
}

export async function startPebble(opts: PebbleOptions): Promise<Pebble> {
  const binary = requireBinary('pebble');
  const dir = path.resolve(opts.dir);
  const tls = await makeListenerCertificate(dir);
  return onFreePort(opts.port, async (port) => {
    const managementPort = await freePort();
    const configFile = path.join(dir, 'pebble-config.json');
    await writeFile(
      configFile,
      JSON.stringify(
        {
          pebble: {
            listenAddress: `${HOST}:${port}`,
            managementListenAddress: `${HOST}:${managementPort}`,
            certificate: tls.certFile,
            privateKey: tls.keyFile,
            // Only DNS-01 is used here; these ports are never connected to.
            httpPort: 5002,
            tlsPort: 5001,
            ocspResponderURL: '',
            externalAccountBindingRequired: false,
          },
        },
        null,
        2,
      ),
    );
    const env = [
      'PEBBLE_VA_NOSLEEP=1', // no random 0–15 s pause before each validation
      'PEBBLE_WFE_NONCEREJECT=0', // pebble rejects 5% of nonces by default
      'PEBBLE_AUTHZREUSE=0', // every order proves its names again
    ];
    const dnsServer = `${opts.dnsServer.host ?? HOST}:${opts.dnsServer.port}`;
    // env(1) execs pebble in place: the pid (which must own the listener) stays pebble's.
    const args = [...env, binary, '-config', configFile, '-dnsserver', dnsServer];
    const proc = new ServerProcess(`pebble on ${HOST}:${port}`, '/usr/bin/env', args, dir);
    proc.spawn();
    await proc.waitUntilReady(port, async () => (await get(tls.caFile, port, '/dir')).status === 200);
    const pem = async (what: string): Promise<string> => {
      const r = await get(tls.caFile, managementPort, what);
      if (r.status !== 200) throw new Error(`lab: pebble ${what}: HTTP ${r.status}`);
      return r.body;
    };
    return {
      host: HOST,
      port,
      managementPort,
      directoryUrl: `https://${HOST}:${port}/dir`,
      tlsCaFile: tls.caFile,
      dir,
      issuingRoot: () => pem('/roots/0'),
      issuingIntermediate: () => pem('/intermediates/0'),
      stop: () => proc.stop(),
    };
  });
}

/** A GET over HTTPS to pebble on loopback, trusting only `caFile`. */
async function get(caFile: string, port: number, urlPath: string): Promise<{ status: number; body: string }> {
  const ca = await readFile(caFile);
  return new Promise((resolve, reject) => {
    const req = request({ host: HOST, port, path: urlPath, method: 'GET', ca, timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

interface ListenerCertificate {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** A throw-away CA and a certificate for 127.0.0.1 / localhost signed by it (EC P-256). */
async function makeListenerCertificate(dir: string): Promise<ListenerCertificate> {
  const caFile = path.join(dir, 'pebble-tls-ca.pem');
  const caKey = path.join(dir, 'pebble-tls-ca.key');
  const keyFile = path.join(dir, 'pebble-tls.key');
  const csr = path.join(dir, 'pebble-tls.csr');
  const certFile = path.join(dir, 'pebble-tls.pem');
  const ext = path.join(dir, 'pebble-tls.ext');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    caKey,
    '-out',
    caFile,
    '-days',
    '7',
    '-subj',
    '/CN=lab pebble TLS CA',
  ]);
  await openssl(['req', '-new', ...ec, '-keyout', keyFile, '-out', csr, '-subj', '/CN=localhost']);
  await writePrivateFile(
    ext,
    'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n',
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    caFile,
    '-CAkey',
    caKey,
    '-set_serial',
    '0x1001',
    '-days',
    '7',
    '-sha256',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return { caFile, certFile, keyFile };
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run(requireBinary('openssl'), args, { timeout: 30000 });
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`lab: openssl ${args[0]} failed: ${e.stderr ?? e.message}`);
  }
}
