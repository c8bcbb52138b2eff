/**
 * A throw-away certificate authority made with the real `openssl` command: a CA certificate
 * for the clients to trust and server certificates for 127.0.0.1 / ::1 / localhost that the
 * bridge serves. Keys are EC P-256, written mode 0600 in the given directory.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface IssuedCertificate {
  /** The server certificate followed by the CA certificate (a full chain, as certbot writes it). */
  certFile: string;
  keyFile: string;
  /** SHA-256 fingerprint as node prints it (`AB:CD:…`), to tell which certificate a server sent. */
  fingerprint256: string;
  serial: string;
}

export class TestCa {
  private constructor(
    readonly dir: string,
    readonly caFile: string,
    private readonly caKey: string,
  ) {}

  private serial = 0x1000;

  static async create(dir: string, name = 'ddns-bridge test CA'): Promise<TestCa> {
    const caFile = path.join(dir, 'ca.pem');
    const caKey = path.join(dir, 'ca.key');
    await openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      caKey,
      '-out',
      caFile,
      '-days',
      '30',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await chmod(caKey, 0o600);
    return new TestCa(dir, caFile, caKey);
  }

  /**
   * A server certificate signed by this CA, valid `days` days from now, for the loopback names.
   * `name` is its CN and the stem of its files (`name`.pem, `name`.key).
   */
  async issue(name: string, opts: { days?: number } = {}): Promise<IssuedCertificate> {
    const keyFile = path.join(this.dir, `${name}.key`);
    const csr = path.join(this.dir, `${name}.csr`);
    const leaf = path.join(this.dir, `${name}.leaf.pem`);
    const ext = path.join(this.dir, `${name}.ext`);
    const certFile = path.join(this.dir, `${name}.pem`);
    const serial = `0x${(++this.serial).toString(16)}`;
    await openssl([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      csr,
      '-subj',
      `/CN=${name}`,
    ]);
    await chmod(keyFile, 0o600);
    await writeFile(
      ext,
      [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=serverAuth',
        'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost',
        '',
      ].join('\n'),
    );
    await openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      this.caFile,
      '-CAkey',
      this.caKey,
      '-set_serial',
      serial,
      '-days',
      String(opts.days ?? 30),
      '-sha256',
      '-extfile',
      ext,
      '-out',
      leaf,
    ]);
    const leafPem = await readFile(leaf, 'utf8');
    await writeFile(certFile, leafPem + (await readFile(this.caFile, 'utf8')));
    const x509 = new X509Certificate(leafPem);
    return { certFile, keyFile, fingerprint256: x509.fingerprint256, serial: x509.serialNumber };
  }
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args, { timeout: 30000 });
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`openssl ${args[0]} failed: ${e.stderr ?? e.message}`);
  }
}
