/**
 * Certificates for a dynamic host, end to end: a lab pebble (its DNS-01 validation asks the
 * lab primary) issues a certificate for H and *.H to lego (httpreq and acme-dns providers) and
 * to certbot (manual hooks that call the update endpoint with curl), through the real serve
 * process, on Knot and BIND. Afterwards the primary holds no `_acme-challenge` TXT record.
 * The recipes are those of docs/clients.md, "Certificates (ACME DNS-01)".
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startPebble, writePrivateFile, type Pebble } from '../../src/lab/index.js';
import { ROOT, type BridgeEnv } from '../support/bridge.js';
import {
  acmeDnsStorage,
  CERTBOT_ACME_DNS_HOOK,
  CERTBOT_AUTH_HOOK,
  CERTBOT_CLEANUP_HOOK,
  certbotCertificateFile,
  httpreqEnv,
  inspectCertificate,
  legoCertificateFile,
  legoLacksAcmeDns,
  runCertbot,
  runLego,
} from './acme-clients.js';
import { clientDir, redact, requireInterop, runCurl, startInteropEnv, uniqueHost, type ProcResult } from './support.js';

const ACCOUNT = { name: 'erin', password: 'erin-account-pw' };
const ACME_VALUE = /^"[A-Za-z0-9_-]{43}"$/;

interface Token {
  id: string;
  token: string;
}

for (const kind of ['knot', 'bind'] as const) {
  describe(`ACME DNS-01: pebble issues H and *.H to lego and certbot (${kind})`, function () {
    this.timeout(120_000);
    let env: BridgeEnv;
    let pebble: Pebble;

    before(async function () {
      requireInterop(this, ['pebble', 'lego', 'certbot', 'curl', 'openssl']);
      env = await startInteropEnv(kind);
      pebble = await startPebble({ dir: await clientDir(env, 'pebble'), dnsServer: { port: env.ns.port } });
      await env.addAccount(ACCOUNT.name, ACCOUNT.password);
    });
    after(async () => {
      await pebble?.stop();
      await env?.stop();
    });

    const bridge = (): string => `http://127.0.0.1:${env.port}`;

    async function host(label: string): Promise<string> {
      const h = uniqueHost(label);
      await env.addHost(h, ACCOUNT.name);
      return h;
    }

    /** `token add H --acme-only`: the token alone on the last line, its id on the first. */
    async function acmeToken(fqdn: string): Promise<Token> {
      const lines = (await env.cliOk(['token', 'add', fqdn, '--acme-only'])).trimEnd().split('\n');
      const token = lines.at(-1)!;
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      const id = /^token ([0-9a-f]{12}) for /.exec(lines[0]!)?.[1];
      expect(id, lines[0]).to.be.a('string');
      return { id: id!, token };
    }

    const challenge = (h: string): Promise<string[]> => env.ns.query(`_acme-challenge.${h}`, 'TXT');

    /** The client succeeded; its output (secrets masked) otherwise. */
    function expectSuccess(result: ProcResult, ...secrets: string[]): void {
      let shown = redact(result.output);
      for (const s of secrets) shown = shown.split(s).join('<secret>');
      expect(result.code, `exit ${result.code} ${result.signal ?? ''}\n${shown.slice(-4000)}`).to.equal(0);
    }

    /** The leaf names exactly H and *.H and chains to this pebble's root (`openssl verify`). */
    async function expectCertificate(file: string, h: string, scratch: string): Promise<void> {
      const issued = await inspectCertificate(file, pebble, scratch);
      expect(issued.names).to.deep.equal([`*.${h}`, h]);
      expect(issued.verify.code, issued.verify.output).to.equal(0);
      expect(issued.verify.stdout.trim()).to.match(/: OK$/);
    }

    it('lego --dns httpreq with the account password: a certificate for H and *.H, no TXT left', async () => {
      const h = await host('lego-httpreq');
      const dir = await clientDir(env, 'lego');
      const result = await runLego({
        dir,
        pebble,
        nameserverPort: env.ns.port,
        email: 'erin@example.test',
        domains: [h, `*.${h}`],
        provider: 'httpreq',
        env: httpreqEnv(bridge(), ACCOUNT.name, ACCOUNT.password),
      });
      expectSuccess(result, ACCOUNT.password);
      await expectCertificate(legoCertificateFile(dir, h), h, dir);
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('lego --dns httpreq with an --acme-only token, login = H', async () => {
      const h = await host('lego-token');
      const t = await acmeToken(h);
      const dir = await clientDir(env, 'lego');
      const result = await runLego({
        dir,
        pebble,
        nameserverPort: env.ns.port,
        email: 'erin@example.test',
        domains: [h, `*.${h}`],
        provider: 'httpreq',
        env: httpreqEnv(bridge(), h, t.token),
      });
      expectSuccess(result, t.token);
      await expectCertificate(legoCertificateFile(dir, h), h, dir);
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('lego --dns acme-dns with a storage file (user = H, key = an --acme-only token)', async function () {
      const h = await host('lego-acmedns');
      const t = await acmeToken(h);
      const dir = await clientDir(env, 'lego');
      const storage = path.join(dir, 'acme-dns.json');
      await writePrivateFile(storage, acmeDnsStorage(bridge(), h, h, t.token));
      const result = await runLego({
        dir,
        pebble,
        nameserverPort: env.ns.port,
        email: 'erin@example.test',
        domains: [h, `*.${h}`],
        provider: 'acme-dns',
        env: { ACME_DNS_API_BASE: bridge(), ACME_DNS_STORAGE_PATH: storage },
      });
      if (legoLacksAcmeDns(result)) {
        console.warn('      skipped: this lego is built without the acme-dns provider (Debian 12: lego 4.9.1)');
        this.skip();
      }
      expectSuccess(result, t.token);
      await expectCertificate(legoCertificateFile(dir, h), h, dir);
      // The acme-dns API has no cleanup: the newest two values stay, as acme-dns itself keeps them.
      const left = await challenge(h);
      expect(left).to.have.length(2);
      for (const v of left) expect(v).to.match(ACME_VALUE);
      const cleared = await runCurl(dir, `${bridge()}/dyndns/update?hostname=${h}&clear=true`, {
        user: h,
        password: t.token,
      });
      expect(cleared.body).to.match(/^good\b/);
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('certbot --manual with hooks calling the update endpoint: both values at once, each removed after', async () => {
      const h = await host('certbot');
      const dir = await clientDir(env, 'certbot');
      const netrc = path.join(dir, 'ddns-bridge.netrc');
      await writePrivateFile(netrc, `machine 127.0.0.1 login ${ACCOUNT.name} password ${ACCOUNT.password}\n`);
      const result = await runCertbot({
        dir,
        pebble,
        domains: [h, `*.${h}`],
        authHook: CERTBOT_AUTH_HOOK,
        cleanupHook: CERTBOT_CLEANUP_HOOK,
        env: { BRIDGE: bridge(), NETRC: netrc },
      });
      expectSuccess(result, ACCOUNT.password);
      await expectCertificate(certbotCertificateFile(dir, h), h, dir);
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('certbot with a hook speaking the acme-dns API (X-Api-User = the token id): values stay until clear=true', async () => {
      const h = await host('certbot-acmedns');
      const t = await acmeToken(h);
      const dir = await clientDir(env, 'certbot');
      const headers = path.join(dir, 'ddns-bridge.headers');
      await writePrivateFile(headers, `X-Api-User: ${t.id}\nX-Api-Key: ${t.token}\n`);
      const result = await runCertbot({
        dir,
        pebble,
        domains: [h, `*.${h}`],
        authHook: CERTBOT_ACME_DNS_HOOK,
        env: { BRIDGE: bridge(), HEADERS: headers },
      });
      expectSuccess(result, t.token);
      await expectCertificate(certbotCertificateFile(dir, h), h, dir);
      const left = await challenge(h);
      expect(left).to.have.length(2);
      for (const v of left) expect(v).to.match(ACME_VALUE);
      const cleared = await runCurl(dir, `${bridge()}/dyndns/update?hostname=${h}&clear=true`, {
        user: h,
        password: t.token,
      });
      expect(cleared.body).to.equal('good\n');
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('the acme-dns request as lego\'s goacmedns 0.1.1 sends it: {"SubDomain", "Txt"}, 200', async () => {
      // goacmedns marshals a struct without JSON tags; acme-dns (Go) reads the keys case-insensitively.
      const h = await host('goacmedns');
      const t = await acmeToken(h);
      const value = 'A'.repeat(43);
      const res = await fetch(`${bridge()}/update`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Api-User': h, 'X-Api-Key': t.token },
        body: JSON.stringify({ SubDomain: h, Txt: value }),
      });
      expect([res.status, await res.text()]).to.deep.equal([200, `{"txt": "${value}"}`]);
      expect(await challenge(h)).to.deep.equal([`"${value}"`]);
    });
  });
}

describe('docs/clients.md: the ACME recipes are the ones the tests run', () => {
  let doc: string;
  before(async () => {
    doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
  });

  it('shows the certbot hooks verbatim', () => {
    expect(doc).to.include(CERTBOT_AUTH_HOOK);
    expect(doc).to.include(CERTBOT_CLEANUP_HOOK);
    expect(doc).to.include(CERTBOT_ACME_DNS_HOOK);
  });

  it("shows lego's httpreq environment and the acme-dns storage file", () => {
    for (const name of Object.keys(httpreqEnv('', '', ''))) expect(doc).to.include(name);
    expect(doc).to.include('ACME_DNS_STORAGE_PATH');
    expect(doc).to.include(acmeDnsStorage('https://ddns.example.org', 'H', 'H', 'TOKEN'));
  });
});
