/**
 * Certificates through the RFC 2136 gateway, end to end: a lab pebble (its DNS-01 validation
 * asks the lab primary) issues a certificate for H and *.H to lego (`--dns rfc2136`) and to
 * certbot (the dns-rfc2136 plugin), each signing with a per-host `--acme-only` TSIG key, through
 * the real serve process, on Knot and BIND. Afterwards the primary holds no `_acme-challenge`
 * TXT record and the bridge records none. The recipes are those of docs/clients.md,
 * "Certificates (ACME DNS-01)".
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requirePythonModulesOrSkip, startPebble, type Pebble } from '../../src/lab/index.js';
import { ROOT, type BridgeEnv } from '../support/bridge.js';
import { waitFor } from '../support/wait.js';
import {
  certbotCertificateFile,
  certbotRfc2136Args,
  certbotRfc2136Ini,
  inspectCertificate,
  legoCertificateFile,
  rfc2136Env,
  runCertbotRfc2136,
  runLego,
  type GatewayKey,
} from './acme-clients.js';
import { clientDir, requireInterop, startInteropEnv, uniqueHost, type ProcResult } from './support.js';

const ACCOUNT = { name: 'gwen', password: 'gwen-account-pw' };

/** The placeholders of the recipes in docs/clients.md (as in its "RFC 2136 clients"): address GW, port 5353. */
const DOC_KEY: GatewayKey = { name: 'NAME', algorithm: 'hmac-sha256', secret: 'SECRET' };
const DOC_ADDRESS = 'GW';
const DOC_PORT = 5353;
const DOC_CREDENTIALS = '/etc/letsencrypt/ddns-bridge-rfc2136.ini';
/** The plugin's default wait, as the doc shows it; the tests wait 1 s (the primary is the only server). */
const DOC_PROPAGATION_SECONDS = 60;

for (const kind of ['knot', 'bind'] as const) {
  describe(`ACME DNS-01 through the RFC 2136 gateway: pebble issues H and *.H to lego and certbot (${kind})`, function () {
    this.timeout(120_000);
    let env: BridgeEnv;
    let pebble: Pebble;

    before(async function () {
      requireInterop(this, ['pebble', 'lego', 'certbot', 'openssl']);
      requirePythonModulesOrSkip(this, ['certbot_dns_rfc2136']);
      env = await startInteropEnv(kind, {}, { gateway: true });
      pebble = await startPebble({ dir: await clientDir(env, 'pebble'), dnsServer: { port: env.ns.port } });
      await env.addAccount(ACCOUNT.name, ACCOUNT.password);
    });
    after(async () => {
      await pebble?.stop();
      await env?.stop();
    });

    async function host(label: string): Promise<string> {
      const h = uniqueHost(label);
      await env.addHost(h, ACCOUNT.name);
      return h;
    }

    /** `token add H --tsig --acme-only`: the key's name, algorithm and secret from its second line. */
    async function acmeKey(fqdn: string): Promise<GatewayKey> {
      const out = await env.cliOk(['token', 'add', fqdn, '--tsig', '--acme-only']);
      const m = /^It is shown only now\. Key name (\S+), algorithm (\S+), secret (\S+)$/m.exec(out);
      expect(m, 'the key line of token add --tsig').not.to.equal(null);
      const key = { name: m![1]!, algorithm: m![2]!, secret: m![3]! };
      expect(key.name).to.match(new RegExp(`^[0-9a-f]{12}\\.${fqdn.replace(/\./g, '\\.')}$`));
      expect(key.algorithm).to.equal('hmac-sha256');
      expect(out).to.match(/ACME TXT values only/);
      return key;
    }

    /** No TXT at `_acme-challenge.H`: neither on the primary nor in what the bridge records. */
    async function expectNoTxtLeft(h: string): Promise<void> {
      expect(await env.ns.query(`_acme-challenge.${h}`, 'TXT')).to.deep.equal([]);
      expect((await env.hostJson(h))['txt']).to.deep.equal([]);
    }

    /** The (opcode, rcode) of each gateway answer logged after `from` (an offset into the serve logs). */
    function gatewayAnswers(from: number): string[] {
      return env.logs
        .join('')
        .slice(from)
        .split('\n')
        .filter((l) => l.includes('"gateway answer"'))
        .map((l) => JSON.parse(l) as { opcode: string; rcode: string })
        .map((a) => `${a.opcode} ${a.rcode}`);
    }
    const logMark = (): number => env.logs.join('').length;

    /** Wait until the gateway has answered `opcode` BADKEY (a known key, another algorithm) since `from`; no BADSIG. */
    async function expectBadKey(from: number, opcode: 'QUERY' | 'UPDATE'): Promise<void> {
      await waitFor(() => gatewayAnswers(from).includes(`${opcode} BADKEY`), {
        what: `the gateway to log a ${opcode} answered BADKEY`,
      });
      expect(gatewayAnswers(from).filter((a) => a.endsWith('BADSIG'))).to.deep.equal([]);
    }

    /** The gateway answered the four UPDATEs of an issuance (present and clean up, for H and *.H) NOERROR. */
    async function expectFourUpdates(from: number): Promise<void> {
      const updates = (): string[] => gatewayAnswers(from).filter((a) => a.startsWith('UPDATE '));
      await waitFor(() => updates().length >= 4, { what: 'the gateway to log four UPDATE answers' });
      expect(updates()).to.deep.equal(Array<string>(4).fill('UPDATE NOERROR'));
    }

    /** The client succeeded; its output (the secret masked) otherwise. */
    function expectSuccess(result: ProcResult, secret: string): void {
      const shown = result.output.split(secret).join('<secret>');
      expect(result.code, `exit ${result.code} ${result.signal ?? ''}\n${shown.slice(-4000)}`).to.equal(0);
    }

    /** The leaf names exactly H and *.H and chains to this pebble's root (`openssl verify`). */
    async function expectCertificate(file: string, h: string, scratch: string): Promise<void> {
      const issued = await inspectCertificate(file, pebble, scratch);
      expect(issued.names).to.deep.equal([`*.${h}`, h]);
      expect(issued.verify.code, issued.verify.output).to.equal(0);
      expect(issued.verify.stdout.trim()).to.match(/: OK$/);
    }

    it('lego --dns rfc2136 with an --acme-only TSIG key: a certificate for H and *.H, no TXT left', async () => {
      const h = await host('lego-rfc2136');
      const key = await acmeKey(h);
      const dir = await clientDir(env, 'lego');
      const from = logMark();
      const result = await runLego({
        dir,
        pebble,
        nameserverPort: env.ns.port,
        email: 'gwen@example.test',
        domains: [h, `*.${h}`],
        provider: 'rfc2136',
        // lego solves the names one after the other, RFC2136_SEQUENCE_INTERVAL apart (default 60 s).
        env: { ...rfc2136Env(`127.0.0.1:${env.gatewayPort}`, key), RFC2136_SEQUENCE_INTERVAL: '1' },
      });
      expectSuccess(result, key.secret);
      await expectCertificate(legoCertificateFile(dir, h), h, dir);
      await expectFourUpdates(from);
      await expectNoTxtLeft(h);
    });

    it('certbot --dns-rfc2136 with an --acme-only TSIG key: a certificate for H and *.H, no TXT left', async () => {
      const h = await host('certbot-rfc2136');
      const key = await acmeKey(h);
      const dir = await clientDir(env, 'certbot');
      const from = logMark();
      const result = await runCertbotRfc2136({
        dir,
        pebble,
        domains: [h, `*.${h}`],
        ini: certbotRfc2136Ini('127.0.0.1', env.gatewayPort, key),
        propagationSeconds: 1,
      });
      expectSuccess(result, key.secret);
      await expectCertificate(certbotCertificateFile(dir, h), h, dir);
      await expectFourUpdates(from);
      await expectNoTxtLeft(h);
    });

    // Last: the BADKEY answers count against 127.0.0.1 (docs/protocol.md, the order of checks).
    it('lego without RFC2136_TSIG_ALGORITHM signs with HMAC-SHA1: BADKEY, no certificate, nothing set', async () => {
      const h = await host('lego-sha1');
      const key = await acmeKey(h);
      const dir = await clientDir(env, 'lego');
      const { RFC2136_TSIG_ALGORITHM: _, ...noAlgorithm } = rfc2136Env(`127.0.0.1:${env.gatewayPort}`, key);
      const from = logMark();
      const result = await runLego({
        dir,
        pebble,
        nameserverPort: env.ns.port,
        email: 'gwen@example.test',
        domains: [h],
        provider: 'rfc2136',
        env: noAlgorithm,
      });
      const shown = result.output.split(key.secret).join('<secret>');
      expect(result.code, shown).not.to.equal(0);
      expect(shown).to.include('rfc2136: failed to insert: DNS update failed: dns: bad authentication');
      await expectBadKey(from, 'UPDATE');
      await expectNoTxtLeft(h);
    });

    it('certbot with the algorithm in lower case signs with HMAC-MD5: BADKEY, no certificate, nothing set', async () => {
      const h = await host('certbot-md5');
      const key = await acmeKey(h);
      const dir = await clientDir(env, 'certbot');
      const ini = certbotRfc2136Ini('127.0.0.1', env.gatewayPort, key).replace('HMAC-SHA256', 'hmac-sha256');
      expect(ini).to.include('dns_rfc2136_algorithm = hmac-sha256\n');
      const from = logMark();
      const result = await runCertbotRfc2136({ dir, pebble, domains: [h], ini, propagationSeconds: 1 });
      const shown = result.output.split(key.secret).join('<secret>');
      expect(result.code, shown).not.to.equal(0);
      expect(shown).to.include("The peer didn't know the key we used");
      // Its first message is the signed SOA query of `_acme-challenge.H`.
      await expectBadKey(from, 'QUERY');
      await expectNoTxtLeft(h);
    });
  });
}

describe('docs/clients.md: the RFC 2136 ACME recipes are the ones the tests run', () => {
  let doc: string;
  before(async () => {
    doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
  });

  it("shows certbot's credentials file and command line", () => {
    expect(doc).to.include(certbotRfc2136Ini(DOC_ADDRESS, DOC_PORT, DOC_KEY));
    // The doc breaks the command line with backslashes.
    expect(doc.replace(/ \\\n\s+/g, ' ')).to.include(
      `certbot certonly ${certbotRfc2136Args(DOC_CREDENTIALS, DOC_PROPAGATION_SECONDS).join(' ')} -d H -d '*.H'`,
    );
  });

  it("shows lego's rfc2136 environment and command line", () => {
    const exports = Object.entries(rfc2136Env(`${DOC_ADDRESS}:${DOC_PORT}`, DOC_KEY)).map(
      ([k, v]) => `export ${k}=${v}`,
    );
    expect(doc).to.include(exports.join('\n'));
    expect(doc).to.include("lego --email you@example.org --accept-tos --dns rfc2136 --domains H --domains '*.H' run");
  });
});
