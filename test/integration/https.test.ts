/**
 * The HTTPS listener of the real `serve` process beside its plain one: the same reply bytes
 * over both, TLS 1.2 and 1.3 only, certificates re-read on SIGHUP (under load, in every worker
 * of `serve --workers 2`, a bad new pair refused), `check` on expiring and broken pairs, and
 * `serve` refusing to start with a pair it cannot use. Certificates come from a CA made with
 * openssl; records are read from the primary (Knot).
 */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { deepMerge, rawRequest, runCli, sleep, ZONE } from '../support/bridge.js';
import { TlsBridge, tlsExchange, type TlsExchange } from '../support/tls-bridge.js';
import type { IssuedCertificate } from '../support/test-ca.js';

const BINARIES = ['redis-server', 'knotd', 'kdig', 'openssl'];
const ALICE = { user: 'alice', password: 'alice-https-pw' };
const UA = 'ddns-bridge-tests/1.0 tests@example.test';
/** A request that touches neither Redis nor DNS: its reply is always the same 404. */
const NOT_FOUND = 'GET /no-such-path HTTP/1.0\r\n\r\n';
const RELOAD_FAILED = 'tls certificate not reloaded; keeping the previous one';

function basic(user: string, password: string): string {
  return `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function get(target: string, headers: string[] = []): string {
  const head = [`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', `User-Agent: ${UA}`, 'Connection: close', ...headers];
  return [...head, '', ''].join('\r\n');
}

/** A POST of `form` as an x-www-form-urlencoded body. */
function post(form: string, headers: string[]): string {
  const head = ['POST /nic/update HTTP/1.0', `User-Agent: ${UA}`, ...headers];
  head.push('Content-Type: application/x-www-form-urlencoded', `Content-Length: ${Buffer.byteLength(form)}`);
  return [...head, '', form].join('\r\n');
}

let seq = 0;
const uniqueHost = (label: string): string => `${label}-${process.pid}-${++seq}.${ZONE}`;

/** When `cert` expires, as `check` prints it. */
function notAfterOf(cert: IssuedCertificate): string {
  return new Date(new X509Certificate(readFileSync(cert.certFile)).validTo).toISOString();
}

/** The lines of a PEM file between its BEGIN and END lines (the key material itself). */
async function pemBody(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).split('\n').filter((l) => l.length > 0 && !l.startsWith('-----'));
}

describe('HTTPS beside plain HTTP (one serve process, Knot)', function () {
  this.timeout(60000);
  let b: TlsBridge;

  before(async function () {
    requireBinariesOrSkip(this, BINARIES);
    b = await TlsBridge.start();
    await b.env.addAccount(ALICE.user, ALICE.password);
  });
  after(async () => b?.stop());

  const plain = (request: string): Promise<Buffer> => rawRequest('127.0.0.1', b.plainPort, request);
  const overTls = async (request: string): Promise<Buffer> => (await b.request(request)).reply;
  const aliceAuth = (): string => basic(ALICE.user, ALICE.password);
  /** The error of a handshake offering only `version` (and the ciphers that go with it); undefined if it worked. */
  const refusalOf = (version: 'TLSv1' | 'TLSv1.1'): Promise<NodeJS.ErrnoException | undefined> =>
    b.request(NOT_FOUND, { minVersion: version, maxVersion: version, ciphers: 'DEFAULT@SECLEVEL=0' }).then(
      () => undefined,
      (err: NodeJS.ErrnoException) => err,
    );

  it('logs each listener once, the HTTPS one marked tls with its certificate', () => {
    const listening = b.log().filter((l) => l.msg === 'listening');
    expect(listening.map((l) => [l.port, l.tls])).to.deep.equal([
      [b.plainPort, undefined],
      [b.tlsPort, true],
    ]);
    const loaded = b.log().filter((l) => l.msg === 'tls certificate loaded');
    expect(loaded).to.have.length(1);
    expect(loaded[0]).to.include({ listener: 'listen[1].tls', address: `127.0.0.1:${b.tlsPort}` });
    expect(loaded[0]).to.include({ subject: 'CN=server-1', issuer: 'CN=ddns-bridge test CA' });
  });

  it('the same request gets the same reply bytes over plain HTTP and over TLS', async () => {
    const auth = aliceAuth();
    const [viaPlain, viaTls] = [uniqueHost('plain'), uniqueHost('tls')];
    for (const h of [viaPlain, viaTls]) await b.env.addHost(h, ALICE.user);

    // A change: `good` for one host over each transport.
    const goodPlain = await plain(get(`/nic/update?hostname=${viaPlain}&myip=203.0.113.50`, [auth]));
    const goodTls = await overTls(get(`/nic/update?hostname=${viaTls}&myip=203.0.113.50`, [auth]));
    expect(goodPlain.toString()).to.match(/^HTTP\/1\.0 200 OK\r\n[\s\S]*\r\n\r\ngood 203\.0\.113\.50\n$/);
    expect(goodTls.equals(goodPlain), goodTls.toString()).to.equal(true);
    expect(await b.env.ns.query(viaTls, 'A')).to.deep.equal(['203.0.113.50']);

    const same: [string, string][] = [
      ['nochg', get(`/nic/update?hostname=${viaTls}&myip=203.0.113.50`, [auth])],
      ['badauth: 401, challenge', get(`/nic/update?hostname=${viaTls}&myip=203.0.113.51`, [basic(ALICE.user, 'x')])],
      ['notfqdn', get('/nic/update?myip=203.0.113.52', [auth])],
      ['badagent', `GET /nic/update?hostname=${viaTls} HTTP/1.0\r\n${auth}\r\n\r\n`],
      ['404', NOT_FOUND],
      ['405', 'DELETE /nic/update HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['HEAD: headers only', 'HEAD /nic/update HTTP/1.0\r\n\r\n'],
      ['400', 'GARBAGE\r\n\r\n'],
      ['POST with a form body', post(`hostname=${viaTls}&myip=203.0.113.50`, [auth])],
    ];
    for (const [what, request] of same) {
      // Frequent requests for one host in a row are counted: leave the interval (50 ms) between them.
      await sleep(60);
      const p = await plain(request);
      await sleep(60);
      const t = await overTls(request);
      expect(t.toString(), what).to.equal(p.toString());
      expect(t.equals(p), what).to.equal(true);
    }
    expect(await b.env.ns.query(viaTls, 'A')).to.deep.equal(['203.0.113.50']);
  });

  it('a client that half-closes after its request still gets its reply and the change is made', async () => {
    const h = uniqueHost('half');
    await b.env.addHost(h, ALICE.user);
    const r = await b.request(get(`/nic/update?hostname=${h}&myip=203.0.113.55`, [aliceAuth()]), { halfClose: true });
    expect(r.reply.toString()).to.match(/^HTTP\/1\.0 200 OK\r\n[\s\S]*\r\n\r\ngood 203\.0\.113\.55\n$/);
    expect(await b.env.ns.query(h, 'A')).to.deep.equal(['203.0.113.55']);
  });

  it('accepts TLS 1.2 and 1.3; the server refuses TLS 1.0 and 1.1 with a protocol_version alert', async () => {
    for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
      const r = await b.request(NOT_FOUND, { minVersion: version, maxVersion: version });
      expect(r.protocol).to.equal(version);
      expect(r.reply.toString()).to.match(/^HTTP\/1\.0 404 Not Found\r\n/);
    }
    // An alert received: the server refused, not our own client.
    for (const version of ['TLSv1', 'TLSv1.1'] as const) {
      expect((await refusalOf(version))?.code, version).to.equal('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    }
  });

  describe('SIGHUP re-reads the certificate and key', () => {
    /** The certificate the listener shows new connections now. */
    const shown = async (): Promise<string> => (await b.request(NOT_FOUND)).fingerprint256;

    it('new connections get the new pair; no request of a load fails; an open connection is answered', async () => {
      const expected = await plain(NOT_FOUND);
      const before = await shown();
      const next = await b.ca.issue('server-2');
      expect(next.fingerprint256).not.to.equal(before);

      // A connection whose handshake is done before the reload and whose request is sent after it.
      let opened!: () => void;
      let send!: () => void;
      const heldOpen = new Promise<void>((r) => (opened = r));
      const sendNow = new Promise<void>((r) => (send = r));
      const held = b.request(NOT_FOUND, {
        beforeSend: () => {
          opened();
          return sendNow;
        },
      });
      await heldOpen;

      const load = new TlsLoad(b.tlsPort, b.caPem, NOT_FOUND, { concurrency: 4, max: 4000 });
      await load.until(() => load.results.length >= 20);
      await b.install(next);
      const [reloaded] = await b.reload();
      load.reloaded = true;
      expect(reloaded).to.include({ reason: 'SIGHUP', certificates: 1 });
      expect(reloaded!.kept).to.equal(undefined);
      await load.until(() => load.results.filter((r) => r.startedAfterReload).length >= 40);
      await load.stop();

      expect(load.errors.map((e) => e.message)).to.deep.equal([]);
      for (const r of load.results) expect(r.reply.equals(expected), r.reply.toString()).to.equal(true);
      const after = load.results.filter((r) => r.startedAfterReload);
      expect(new Set(after.map((r) => r.fingerprint256))).to.deep.equal(new Set([next.fingerprint256]));
      expect(new Set(load.results.map((r) => r.fingerprint256))).to.deep.equal(new Set([before, next.fingerprint256]));

      send();
      const h = await held;
      expect(h.fingerprint256).to.equal(before);
      expect(h.reply.equals(expected)).to.equal(true);
      expect(await shown()).to.equal(next.fingerprint256);

      // A real update over the new certificate, published.
      const host = uniqueHost('reloaded');
      await b.env.addHost(host, ALICE.user);
      const r = await b.request(get(`/nic/update?hostname=${host}&myip=203.0.113.60`, [aliceAuth()]));
      expect(r.reply.toString()).to.match(/\r\n\r\ngood 203\.0\.113\.60\n$/);
      expect(await b.env.ns.query(host, 'A')).to.deep.equal(['203.0.113.60']);
    });

    it("a key that is not the certificate's keeps the old pair; the log says why and holds no key", async () => {
      const current = await shown();
      const [cert, other] = await Promise.all([b.ca.issue('server-3'), b.ca.issue('server-4')]);
      await copyFile(cert.certFile, b.certFile);
      await copyFile(other.keyFile, b.keyFile);
      const since = b.log().length;
      const [reloaded] = await b.reload();
      expect(reloaded).to.include({ certificates: 0 });
      expect(reloaded!.kept).to.deep.equal(['listen[1].tls']);
      const [failed] = b
        .log()
        .slice(since)
        .filter((l) => l.msg === RELOAD_FAILED);
      expect(failed).to.include({ listener: 'listen[1].tls', address: `127.0.0.1:${b.tlsPort}` });
      const reason = `tls.keyFile: ${b.keyFile} is not the key of the certificate in ${b.certFile} (CN=server-3)`;
      expect(String(failed!.error)).to.include(reason);
      expect(await shown()).to.equal(current);
      const keys = [...(await pemBody(other.keyFile)), ...(await pemBody(cert.keyFile))];
      for (const line of keys) expect(b.logText()).not.to.include(line);
    });

    it('a missing, empty or damaged key file keeps the old pair, with the reason logged', async () => {
      const current = await shown();
      const good = await b.ca.issue('server-5');
      await copyFile(good.certFile, b.certFile);
      const replaceKey = async (make: () => Promise<void>): Promise<void> => {
        await rm(b.keyFile, { recursive: true, force: true });
        await make();
      };
      const damagedPem = '-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n';
      const cases: [string, () => Promise<void>, RegExp][] = [
        ['missing', () => replaceKey(async () => undefined), /tls\.keyFile: cannot read \S+\/server\.key \(ENOENT\)/],
        ['a directory', () => replaceKey(() => mkdir(b.keyFile)), /cannot read \S+\/server\.key \(EISDIR\)/],
        ['empty', () => replaceKey(() => writeFile(b.keyFile, '')), /server\.key holds no PEM private key/],
        ['damaged', () => replaceKey(() => writeFile(b.keyFile, damagedPem)), /server\.key holds no usable private/],
      ];
      for (const [what, damage, reason] of cases) {
        await damage();
        const since = b.log().length;
        const [reloaded] = await b.reload();
        expect(reloaded!.kept, what).to.deep.equal(['listen[1].tls']);
        const [failed] = b
          .log()
          .slice(since)
          .filter((l) => l.msg === RELOAD_FAILED);
        expect(String(failed?.error), what).to.match(reason);
        expect(await shown(), what).to.equal(current);
      }
      // Repaired: the next SIGHUP takes it, and the old TLS versions stay refused.
      await b.install(good);
      const [reloaded] = await b.reload();
      expect(reloaded).to.include({ certificates: 1 });
      expect(await shown()).to.equal(good.fingerprint256);
      expect((await refusalOf('TLSv1.1'))?.code).to.equal('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
      expect(b.serve.exitCode).to.equal(null);
    });
  });

  describe('check', () => {
    /** A config like the running one (same Redis and primary) whose HTTPS listener uses `cert`'s files. */
    async function configWith(name: string, certFile: string, keyFile: string): Promise<string> {
      const file = path.join(b.env.dir, `${name}.json`);
      // Never bound: check does not listen, and serve stops before it would.
      const listen = ['127.0.0.1:0', { host: '127.0.0.1', port: 8443, tls: { certFile, keyFile } }];
      await writeFile(file, JSON.stringify(deepMerge(b.env.config, { listen })), { mode: 0o600 });
      return file;
    }
    const check = async (file: string) => runCli(['check', '--config', file]);

    it('prints the certificate of an HTTPS listener as ok', async () => {
      const cert = await b.ca.issue('check-ok');
      const r = await check(await configWith('check-ok', cert.certFile, cert.keyFile));
      expect(r.code, r.stderr).to.equal(0);
      const listener = 'https 127.0.0.1:8443 (listen[1].tls)';
      expect(r.stdout.split('\n')).to.include(`${listener}: ok, CN=check-ok, valid until ${notAfterOf(cert)}`);
      expect(r.stderr).not.to.include('warning');
    });

    it('warns about a certificate that expires within 14 days (exit 0)', async () => {
      const cert = await b.ca.issue('expiring', { days: 3 });
      const r = await check(await configWith('check-expiring', cert.certFile, cert.keyFile));
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.match(
        /^warning: listen\[1\]\.tls\.certFile: the certificate in \S+expiring\.pem \(CN=expiring\) expires in [23] /m,
      );
    });

    it("fails (exit 1) on a key not the certificate's and on an unreadable file, naming the setting", async () => {
      const [cert, other] = await Promise.all([b.ca.issue('check-cert'), b.ca.issue('check-other')]);
      const mismatched = await check(await configWith('check-mismatch', cert.certFile, other.keyFile));
      expect(mismatched.code).to.equal(1);
      const listener = 'https 127.0.0.1:8443 (listen[1].tls)';
      const failed = `${listener}: FAILED: config: listen[1].tls.keyFile: ${other.keyFile} is not the key`;
      expect(mismatched.stderr).to.include(failed);
      const missing = await check(await configWith('check-missing', path.join(b.env.dir, 'nope.pem'), other.keyFile));
      expect(missing.code).to.equal(1);
      expect(missing.stderr).to.match(/FAILED: config: listen\[1\]\.tls\.certFile: cannot read \S+nope\.pem \(ENOENT/);
      for (const line of await pemBody(other.keyFile)) expect(mismatched.stderr + missing.stderr).not.to.include(line);
    });

    it('serve refuses to start with a pair it cannot use: exit 2, the setting named', async () => {
      const [cert, other] = await Promise.all([b.ca.issue('serve-cert'), b.ca.issue('serve-other')]);
      const r = await runCli(['serve', '--config', await configWith('serve-mismatch', cert.certFile, other.keyFile)]);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.match(/^ddns-bridge: config: listen\[1\]\.tls\.keyFile: \S+serve-other\.key is not the/m);
    });
  });
});

describe('HTTPS: clients that give up during the handshake leave nothing behind', function () {
  this.timeout(60000);
  let b: TlsBridge;

  before(async function () {
    requireBinariesOrSkip(this, BINARIES);
    b = await TlsBridge.start({ config: { http: { maxConnections: 2, headersTimeout: 1 } } });
  });
  after(async () => b?.stop());

  it('a handshake cut off, garbage, or nothing, with the connection kept open: closed after headersTimeout, no HTTP written', async () => {
    // A real ClientHello's first bytes: its record header promises more than comes.
    const hello = Buffer.from('16030101620100015e0303', 'hex');
    const sslv2 = Buffer.from('802e0100020015000000', 'hex');
    for (const [name, bytes] of [
      ['cut hello', hello],
      ['SSLv2-style bytes', sslv2],
      ['nothing', Buffer.alloc(0)],
    ] as const) {
      const started = Date.now();
      const { closedAfter, reply } = await new Promise<{ closedAfter: number | undefined; reply: Buffer }>(
        (resolve) => {
          const chunks: Buffer[] = [];
          const socket = net.connect({ host: '127.0.0.1', port: b.tlsPort });
          socket.on('error', () => undefined);
          socket.on('connect', () => bytes.length > 0 && socket.write(bytes));
          socket.on('data', (d: Buffer) => chunks.push(d));
          const timer = setTimeout(() => {
            socket.destroy();
            resolve({ closedAfter: undefined, reply: Buffer.concat(chunks) });
          }, 6000);
          socket.on('close', () => {
            clearTimeout(timer);
            resolve({ closedAfter: Date.now() - started, reply: Buffer.concat(chunks) });
          });
        },
      );
      expect(closedAfter, `${name}: still open 6 s later`).to.not.equal(undefined);
      // The handshake timeout is headersTimeout (1 s); garbage ends it at once.
      expect(closedAfter!, name).to.be.below(2500);
      // Nothing, or a TLS alert record: never plaintext HTTP.
      expect(
        reply.length === 0 || (reply[0] === 0x15 && reply[1] === 0x03),
        `${name}: ${reply.toString('hex')}`,
      ).to.equal(true);
    }
    // Still serving, and none of them held a connection (maxConnections is 2).
    expect((await b.request(NOT_FOUND)).reply.toString()).to.match(/^HTTP\/1\.0 404 Not Found\r\n/);
  });

  /** A client that does not trust the certificate: it closes mid-handshake (as inadyn without its CA does). */
  const distrust = (): Promise<void> =>
    new Promise((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: b.tlsPort });
      socket.once('error', () => undefined);
      socket.once('close', () => resolve());
    });

  it('more of them than maxConnections: requests are still answered, and SIGTERM stops serve (exit 0)', async () => {
    for (let i = 0; i < 5; i++) await distrust();
    // Each one ended on the server too: the next connections are not over the limit of 2.
    for (let i = 0; i < 3; i++) {
      expect((await b.request(NOT_FOUND)).reply.toString()).to.match(/^HTTP\/1\.0 404 Not Found\r\n/);
      expect((await b.request(NOT_FOUND, { halfClose: true })).reply.toString()).to.match(/^HTTP\/1\.0 404 /);
    }
    const exited = new Promise<number | null>((resolve) => b.serve.once('exit', (code) => resolve(code)));
    b.serve.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(b.log().map((l) => l.msg)).to.include('stopped');
  });
});

describe('HTTPS with serve --workers 2: SIGHUP reaches every worker', function () {
  this.timeout(60000);
  let b: TlsBridge;

  before(async function () {
    requireBinariesOrSkip(this, BINARIES);
    b = await TlsBridge.start({ workers: 2 });
  });
  after(async () => b?.stop());

  it('the primary passes SIGHUP on; each worker loads the new pair; no worker restarts', async () => {
    const workers = (): number[] => [
      ...new Set(
        b
          .log()
          .filter((l) => l.msg === 'worker listening')
          .map((l) => Number(l.pid)),
      ),
    ];
    expect(workers()).to.have.length(2);
    const next: IssuedCertificate = await b.ca.issue('server-2');
    await b.install(next);
    const since = b.log().length;
    const reloaded = await b.reload(2);
    expect(new Set(reloaded.map((l) => Number(l.pid)))).to.deep.equal(new Set(workers()));
    for (const l of reloaded) expect(l).to.include({ reason: 'SIGHUP to the primary', certificates: 1 });
    expect(
      b
        .log()
        .slice(since)
        .filter((l) => l.msg === 'reloading'),
    ).to.have.length(1);
    // The kernel spreads new connections over both workers: every one shows the new certificate.
    const shown = new Set<string>();
    for (let i = 0; i < 20; i++) shown.add((await b.request(NOT_FOUND)).fingerprint256);
    expect([...shown]).to.deep.equal([next.fingerprint256]);
    expect(workers()).to.have.length(2);
    expect(b.log().filter((l) => l.msg === 'worker died; starting another')).to.deep.equal([]);
  });
});

interface LoadResult extends TlsExchange {
  /** The connection was opened after the test saw the `reloaded` log line. */
  startedAfterReload: boolean;
}

/**
 * Connection-close requests over TLS, `concurrency` at a time, until stopped or `max` were
 * sent (bounded: a test that never sees what it waits for fails instead of running forever).
 */
class TlsLoad {
  readonly results: LoadResult[] = [];
  readonly errors: Error[] = [];
  reloaded = false;
  private sent = 0;
  private stopped = false;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly port: number,
    private readonly ca: Buffer,
    private readonly request: string,
    private readonly opts: { concurrency: number; max: number },
  ) {
    this.loops = Array.from({ length: opts.concurrency }, () => this.loop());
  }

  private async loop(): Promise<void> {
    while (!this.stopped && this.sent < this.opts.max) {
      this.sent++;
      const startedAfterReload = this.reloaded;
      try {
        this.results.push({ ...(await tlsExchange(this.port, this.ca, this.request)), startedAfterReload });
      } catch (err) {
        this.errors.push(err as Error);
      }
    }
  }

  /** Resolves when `cond` holds; fails when the load ran out of requests first. */
  async until(cond: () => boolean): Promise<void> {
    while (!cond()) {
      if (this.sent >= this.opts.max) throw new Error(`the load sent all ${this.opts.max} requests first`);
      await sleep(10);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}
