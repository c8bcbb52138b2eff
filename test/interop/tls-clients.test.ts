/**
 * The real clients over HTTPS, trusting only the test's own CA (made with openssl): curl
 * `--cacert`, wget `--ca-certificate`, ddclient 3.10 `ssl=yes` + `ssl_ca_file`, inadyn 2.10
 * `ssl = true` + `ca-trust-file`. Each gets `good` and the record is read from the primary.
 */
import { expect } from 'chai';
import path from 'node:path';
import { requirePerlModulesOrSkip, writePrivateFile } from '../../src/lab/index.js';
import { TlsBridge } from '../support/tls-bridge.js';
import {
  clientDir,
  ddclientConfig,
  inadynConfig,
  inadynRequests,
  redact,
  requireInterop,
  runCurl,
  runDdclient,
  runInadyn,
  runProcess,
  uniqueHost,
  wgetStatusLines,
} from './support.js';

const ALICE = { user: 'alice', password: 'alice-tls-clients-pw' };

for (const kind of ['knot', 'bind'] as const) {
  describe(`real clients over HTTPS, trusting the test CA (${kind})`, function () {
    this.timeout(40000);
    let b: TlsBridge;

    before(async function () {
      requireInterop(this, ['curl', 'wget', 'ddclient', 'inadyn', 'openssl']);
      b = await TlsBridge.start({ kind });
      await b.env.addAccount(ALICE.user, ALICE.password);
    });
    after(async () => b?.stop());

    async function host(label: string): Promise<string> {
      const h = uniqueHost(label);
      await b.env.addHost(h, ALICE.user);
      return h;
    }
    const base = (): string => `https://127.0.0.1:${b.tlsPort}`;

    it('curl --cacert: good, the A record on the primary', async () => {
      const h = await host('curl-tls');
      const url = `${base()}/nic/update?hostname=${h}&myip=198.51.100.71`;
      const r = await runCurl(await clientDir(b.env, 'curl'), url, ALICE, ['--cacert', b.ca.caFile]);
      expect(r.statusLine).to.equal('HTTP/1.0 200 OK');
      expect(r.body).to.equal('good 198.51.100.71\n');
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.71']);
    });

    it('curl without the CA refuses the certificate (the test CA is all that is trusted)', async () => {
      const dir = await clientDir(b.env, 'curl');
      const r = await runProcess('curl', ['-q', '-sS', '--max-time', '10', `${base()}/no-such-path`], { cwd: dir });
      expect(r.code, r.stderr).to.equal(60); // CURLE_PEER_FAILED_VERIFICATION
    });

    it('wget --ca-certificate (credentials after the 401 challenge): good, the A record on the primary', async () => {
      const h = await host('wget-tls');
      const dir = await clientDir(b.env, 'wget');
      const rc = path.join(dir, 'wgetrc');
      await writePrivateFile(rc, `http_user = ${ALICE.user}\nhttp_password = ${ALICE.password}\n`);
      const url = `${base()}/dyndns/update?system=dyndns&hostname=${h}&myip=198.51.100.72`;
      const args = ['-S', '-O', '-', '--tries=1', '--timeout=10', `--ca-certificate=${b.ca.caFile}`, url];
      const r = await runProcess('wget', args, { cwd: dir, env: { WGETRC: rc } });
      const log = redact(r.stderr);
      expect(r.code, log).to.equal(0);
      expect(wgetStatusLines(r.stderr), log).to.deep.equal(['HTTP/1.0 401 Unauthorized', 'HTTP/1.0 200 OK']);
      expect(r.stdout).to.equal('good 198.51.100.72\n');
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.72']);
    });

    it('ddclient 3.10 with ssl=yes and ssl_ca_file: SUCCESS, exit 0, the A record on the primary', async function () {
      // ddclient 3.10's TLS: IO::Socket::SSL (libio-socket-ssl-perl, only recommended by ddclient).
      requirePerlModulesOrSkip(this, ['IO::Socket::SSL']);
      const h = await host('ddclient-tls');
      const login = { login: ALICE.user, password: ALICE.password };
      const plain = ddclientConfig({ port: b.tlsPort, ...login, ip: '198.51.100.73', hostLines: [h] });
      expect(plain).to.include('ssl=no\n');
      const config = plain.replace('ssl=no\n', `ssl=yes\nssl_ca_file=${b.ca.caFile}\n`);
      const r = await runDdclient(await clientDir(b.env, 'ddclient'), config);
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`CONNECT:  127.0.0.1:${b.tlsPort}\nCONNECTED:  using SSL\n`);
      expect(out).to.include(`SENDING:  GET /dyndns/update?system=dyndns&hostname=${h}&myip=198.51.100.73 HTTP/1.1`);
      expect(r.stdout, out).to.match(/RECEIVE:\s+good 198\.51\.100\.73\r?\n/);
      expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 198.51.100.73`);
      expect(out).not.to.match(/FAILED|WARNING/);
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.73']);

      // Without ssl_ca_file ddclient checks against the system's CAs: the test CA is not among them.
      const withoutCa = plain.replace('ssl=no\n', 'ssl=yes\n').replace('198.51.100.73', '198.51.100.83');
      const untrusted = await runDdclient(await clientDir(b.env, 'ddclient'), withoutCa);
      expect(untrusted.code, redact(untrusted.output)).to.equal(1);
      expect(untrusted.output).to.include('certificate verify failed');
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.73']);
    });

    it('inadyn 2.10 with ssl = true and ca-trust-file: success, exit 0, the A record on the primary', async () => {
      const h = await host('inadyn-tls');
      const login = { username: ALICE.user, password: ALICE.password };
      const plain = inadynConfig({ port: b.tlsPort, ...login, hostnames: [h], address: { fixed: '198.51.100.74' } });
      expect(plain).to.include('    ssl = false\n');
      const config = `ca-trust-file = ${b.ca.caFile}\n${plain.replace('    ssl = false\n', '    ssl = true\n')}`;
      const r = await runInadyn(await clientDir(b.env, 'inadyn'), config);
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      const requestLines = inadynRequests(r.output).map((q) => q.split(/\r?\n/)[0]);
      expect(requestLines, out).to.deep.equal([`GET /dyndns/update?hostname=${h}&myip=198.51.100.74 HTTP/1.0`]);
      expect(out).to.include('DDNS server response: HTTP/1.0 200 OK');
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 198.51.100.74`);
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.74']);

      // Without ca-trust-file the handshake fails (inadyn -1 still exits 0: its log says it).
      const withoutCa = plain.replace('ssl = false\n', 'ssl = true\n').replace('198.51.100.74', '198.51.100.84');
      const untrusted = await runInadyn(await clientDir(b.env, 'inadyn'), withoutCa);
      expect(untrusted.output).to.include('The certificate is not trusted.');
      expect(untrusted.output).not.to.include('Successful alias table update');
      expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.74']);
    });
  });
}
