/**
 * The DuckDNS dialect (docs/protocol.md, "DuckDNS") with real clients against the real serve process, on Knot and
 * BIND: every documented URL form with curl (the recipes of docs/clients.md, "DuckDNS", word for word), the records
 * read back from the primary with dig; inadyn 2.10 with a custom provider; ddclient 3.10 `protocol=duckdns` over
 * HTTPS (trusting the test CA) keeps a host current. The token travels in the URL, so curl reads it from a mode-0600
 * config file (`-K`), never argv.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requirePerlModulesOrSkip, writePrivateFile } from '../../src/lab/index.js';
import { ROOT, ZONE, parseHttp, type HttpResult } from '../support/bridge.js';
import { TlsBridge } from '../support/tls-bridge.js';
import {
  clientDir,
  inadynConfig,
  inadynRequests,
  requireInterop,
  runDdclient,
  runInadyn,
  runProcess,
  uniqueHost,
  type ProcResult,
} from './support.js';

const ACCOUNT = { user: 'dora', password: 'dora-duckdns-pw' };

/**
 * The recipes of docs/clients.md, "DuckDNS": one curl config line each (`url = "…"`), for the host `home` of the zone
 * `dyn.example.org` at `https://ddns.example.org`, with the token `TOKEN`.
 */
export const DUCKDNS_RECIPES = {
  clientAddress: 'url = "https://ddns.example.org/update?domains=home&token=TOKEN&ip="',
  fqdn: 'url = "https://ddns.example.org/update?domains=home.dyn.example.org&token=TOKEN&ip=203.0.113.7"',
  dualStack:
    'url = "https://ddns.example.org/update?domains=home&token=TOKEN&ip=203.0.113.7&ipv6=2001:db8::7&verbose=true"',
  clear: 'url = "https://ddns.example.org/update?domains=home&token=TOKEN&clear=true"',
  txt: 'url = "https://ddns.example.org/update?domains=home&token=TOKEN&txt=VALUE"',
  txtClear: 'url = "https://ddns.example.org/update?domains=home&token=TOKEN&txt=removed&clear=true"',
} as const;

/** The recipe's curl command line (docs/clients.md). */
export const DUCKDNS_CURL = 'curl -sS -K /etc/ddns-bridge/duckdns.curl';

/** The inadyn recipe (docs/clients.md): a `custom` provider's path and answer. */
export const DUCKDNS_INADYN = ['ddns-path = "/update?domains=%h&token=%p&ip=%i"', 'ddns-response = OK'] as const;

/** The ddclient recipe (docs/clients.md): the tests add the CA, a timeout, the address and no spacing. */
export const DUCKDNS_DDCLIENT = 'protocol=duckdns\nserver=ddns.example.org\npassword=TOKEN\nhome\n';

for (const kind of ['knot', 'bind'] as const) {
  describe(`DuckDNS dialect with curl, ddclient 3.10 and inadyn 2.10 (${kind})`, function () {
    this.timeout(40000);
    let b: TlsBridge;

    before(async function () {
      requireInterop(this, ['curl', 'ddclient', 'inadyn', 'openssl']);
      b = await TlsBridge.start({ kind, config: { dialects: { duckdns: { zone: ZONE } }, log: { level: 'debug' } } });
      await b.env.addAccount(ACCOUNT.user, ACCOUNT.password);
    });
    after(async () => b?.stop());

    /** A host of the account and a token of it: [label, fqdn, token]. */
    async function hostWithToken(name: string): Promise<[string, string, string]> {
      const fqdn = uniqueHost(name);
      await b.env.addHost(fqdn, ACCOUNT.user);
      const token = (await b.env.cliOk(['token', 'add', fqdn])).trimEnd().split('\n').at(-1)!;
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      return [fqdn.slice(0, -ZONE.length - 1), fqdn, token];
    }

    /** A recipe's line for this bridge and host, run as the recipe says (`curl -K file`, -i to see the head). */
    async function recipe(line: string, label: string, token: string, value = ''): Promise<HttpResult> {
      const url = line
        .replace('https://ddns.example.org', `http://127.0.0.1:${b.plainPort}`)
        .replace('domains=home.dyn.example.org', `domains=${label}.${ZONE}`)
        .replace('domains=home', `domains=${label}`)
        .replace('TOKEN', token)
        .replace('VALUE', value);
      return curl(url, token);
    }

    async function curl(configLine: string, token: string): Promise<HttpResult> {
      const dir = await clientDir(b.env, 'curl');
      const file = path.join(dir, 'duckdns.curl');
      await writePrivateFile(file, `${configLine}\n`);
      const proc: ProcResult = await runProcess('curl', ['-q', '-sS', '-i', '--max-time', '10', '-K', file], {
        cwd: dir,
      });
      expect(proc.code, proc.stderr.replaceAll(token, '<token>')).to.equal(0);
      return parseHttp(Buffer.from(proc.stdout));
    }

    const ok = (r: HttpResult, body = 'OK'): void => {
      expect(r.statusLine).to.equal('HTTP/1.0 200 OK');
      expect(r.headers['content-type']).to.equal('text/plain; charset=utf-8');
      expect(r.headers['content-length']).to.equal(String(body.length));
      expect(r.body).to.equal(body);
    };

    it('ip= empty: the client address (a single label in dialects.duckdns.zone); again: OK, nothing sent', async () => {
      const [label, fqdn, token] = await hostWithToken('duck-auto');
      ok(await recipe(DUCKDNS_RECIPES.clientAddress, label, token));
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal(['127.0.0.1']);
      ok(await recipe(DUCKDNS_RECIPES.clientAddress, label, token));
    });

    it('the FQDN as the domain, a given IPv4', async () => {
      const [label, fqdn, token] = await hostWithToken('duck-fqdn');
      ok(await recipe(DUCKDNS_RECIPES.fqdn, label, token));
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal(['203.0.113.7']);
    });

    it('ip and ipv6, verbose: the four lines, UPDATED then NOCHANGE; clear=true removes both records', async () => {
      const [label, fqdn, token] = await hostWithToken('duck-dual');
      ok(await recipe(DUCKDNS_RECIPES.dualStack, label, token), 'OK\n203.0.113.7\n2001:db8::7\nUPDATED');
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal(['203.0.113.7']);
      expect(await b.env.ns.query(fqdn, 'AAAA')).to.deep.equal(['2001:db8::7']);
      ok(await recipe(DUCKDNS_RECIPES.dualStack, label, token), 'OK\n203.0.113.7\n2001:db8::7\nNOCHANGE');
      ok(await recipe(DUCKDNS_RECIPES.clear, label, token));
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal([]);
      expect(await b.env.ns.query(fqdn, 'AAAA')).to.deep.equal([]);
    });

    it('txt=V sets the _acme-challenge TXT; txt=removed&clear=true clears it', async () => {
      const [label, fqdn, token] = await hostWithToken('duck-txt');
      const value = 'duckdns-acme-value-0123456789abcdefghijklmno';
      ok(await recipe(DUCKDNS_RECIPES.txt, label, token, value));
      expect(await b.env.ns.query(`_acme-challenge.${fqdn}`, 'TXT')).to.deep.equal([`"${value}"`]);
      ok(await recipe(DUCKDNS_RECIPES.txtClear, label, token));
      expect(await b.env.ns.query(`_acme-challenge.${fqdn}`, 'TXT')).to.deep.equal([]);
    });

    it('refusals are KO (200, 2 bytes): a wrong token, a password, another domain beside the own, a bad ip', async () => {
      const [label, fqdn, token] = await hostWithToken('duck-ko');
      const [other] = await hostWithToken('duck-other');
      const base = `url = "http://127.0.0.1:${b.plainPort}/update?`;
      const wrong = 'A'.repeat(32);
      ok(await curl(`${base}domains=${label}&token=${wrong}&ip=192.0.2.1"`, token), 'KO');
      ok(await curl(`${base}domains=${label}&token=${ACCOUNT.password}&ip=192.0.2.1"`, token), 'KO');
      ok(await curl(`${base}domains=${label}&token=${token}&ip=192.0.2.300"`, token), 'KO');
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal([]);
      // Several domains: the token is of one host; the other gets !yours, and the reply is KO.
      ok(await curl(`${base}domains=${label},${other}&token=${token}&ip=192.0.2.2"`, token), 'KO');
      // The token's own host was updated all the same (docs/protocol.md, "DuckDNS"); the other was not.
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal(['192.0.2.2']);
      expect(await b.env.ns.query(`${other}.${ZONE}`, 'A')).to.deep.equal([]);
      const refused = b.log().filter((l) => l.msg === 'duckdns update refused');
      expect(refused.map((l) => l['outcome'])).to.deep.equal(['badauth', 'badauth', 'other', '!yours']);
      expect(b.logText()).to.not.include(token);
    });

    it('POST /update stays the acme-dns API', async () => {
      const [, , token] = await hostWithToken('duck-post');
      const r = await curl(
        `url = "http://127.0.0.1:${b.plainPort}/update?domains=x&token=${token}"\ndata = "{}"`,
        token,
      );
      expect(r.statusLine).to.equal('HTTP/1.0 400 Bad Request');
      expect(r.body).to.equal('{"error": "malformed_json_payload"}');
    });

    it('ddclient 3.10 protocol=duckdns over HTTPS (ssl_ca_file): SUCCESS, and it keeps the host current', async function () {
      requirePerlModulesOrSkip(this, ['IO::Socket::SSL']);
      const [label, fqdn, token] = await hostWithToken('duck-ddclient');
      const config = (ip: string): string =>
        DUCKDNS_DDCLIENT.replace('server=ddns.example.org\n', `server=127.0.0.1:${b.tlsPort}\n`)
          .replace(
            'password=TOKEN\n',
            // The second address comes seconds after the first: past ddclient's own 30 s spacing of updates.
            `ssl_ca_file=${b.ca.caFile}\ntimeout=10\nmin-interval=0\nuse=ip, ip=${ip}\npassword=${token}\n`,
          )
          .replace(/\nhome\n$/, `\n${label}\n`);
      const dir = await clientDir(b.env, 'ddclient');
      for (const ip of ['198.51.100.91', '198.51.100.92']) {
        const r = await runDdclient(dir, config(ip), { keepCache: true });
        const out = r.output.replaceAll(token, '<token>');
        expect(r.code, out).to.equal(0);
        expect(out).to.include(`CONNECT:  127.0.0.1:${b.tlsPort}\nCONNECTED:  using SSL\n`);
        expect(out).to.include(`SENDING:  GET /update?domains=${label}&token=<token>&ip=${ip} HTTP/1.1`);
        expect(out).to.include(`SUCCESS:  updating ${label}: good: IP address set to ${ip}`);
        expect(out).not.to.match(/FAILED|WARNING/);
        expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal([ip]);
      }
      // The address it has: ddclient sends nothing (its cache says the host is current).
      const again = await runDdclient(dir, config('198.51.100.92'), { keepCache: true });
      expect(again.code).to.equal(0);
      expect(again.output).not.to.include('SENDING:');
      expect(again.output).to.include(`${label}: skipped: IP address was already set to 198.51.100.92`);
    });

    it('inadyn 2.10, a custom provider with the DuckDNS path: success, the A record on the primary', async () => {
      const [, fqdn, token] = await hostWithToken('duck-inadyn');
      const plain = inadynConfig({
        port: b.plainPort,
        username: fqdn,
        password: token,
        hostnames: [fqdn],
        address: { fixed: '198.51.100.93' },
        ddnsPath: '/update?domains=%h&token=%p&ip=%i',
      });
      const config = plain.replace(`    ${DUCKDNS_INADYN[0]}\n`, `    ${DUCKDNS_INADYN.join('\n    ')}\n`);
      expect(config).to.include(DUCKDNS_INADYN[1]);
      const r = await runInadyn(await clientDir(b.env, 'inadyn'), config);
      const out = r.output.replaceAll(token, '<token>');
      expect(r.code, out).to.equal(0);
      const lines = inadynRequests(r.output).map((q) => q.split(/\r?\n/)[0]!.replaceAll(token, '<token>'));
      expect(lines, out).to.deep.equal([`GET /update?domains=${fqdn}&token=<token>&ip=198.51.100.93 HTTP/1.0`]);
      expect(out).to.include(`Successful alias table update for ${fqdn} => new IP# 198.51.100.93`);
      expect(await b.env.ns.query(fqdn, 'A')).to.deep.equal(['198.51.100.93']);
    });
  });
}

describe('docs/clients.md: the DuckDNS recipes are the ones the tests run', () => {
  it('shows each curl config line and the command verbatim', async () => {
    const doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
    for (const line of Object.values(DUCKDNS_RECIPES)) expect(doc).to.include(line);
    expect(doc).to.include(DUCKDNS_CURL);
    for (const line of DUCKDNS_INADYN) expect(doc).to.include(line);
    expect(doc).to.include(`\`\`\`text\n${DUCKDNS_DDCLIENT}\`\`\``);
  });
});
