/**
 * deSEC's dyndns2 variants (docs/protocol.md, "deSEC variants") with real clients: the curl recipes of
 * docs/clients.md, "deSEC-style URLs", run word for word (with `http.queryCredentials` on), and ddclient 3.10
 * `protocol=noip` over HTTPS against /nic/update. Every record is read back from the primary (Knot, BIND) with dig.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requirePerlModulesOrSkip, writePrivateFile } from '../../src/lab/index.js';
import { parseHttp, ROOT } from '../support/bridge.js';
import { TlsBridge } from '../support/tls-bridge.js';
import { clientDir, redact, requireInterop, runDdclient, runProcess, uniqueHost } from './support.js';

const ALICE = { user: 'alice', password: 'alice-desec-pw' };
const DOC_HOST = 'home.dyn.example.org';
const DOC_BASE = 'https://ddns.example.org';

/** The recipes of docs/clients.md, "deSEC-style URLs", as the page shows them. */
export const RECIPES = {
  token: `curl -H @"$HOME/.ddns-token" -A 'my-script/1.0 me@example.org' \\
  'https://ddns.example.org/update?myipv4=203.0.113.7&myipv6=2001:db8::7'`,
  setA: `curl -H @"$HOME/.ddns-token" -A 'my-script/1.0 me@example.org' \\
  'https://ddns.example.org/nic/update?hostname=home.dyn.example.org&myipv4=203.0.113.8&myipv6=preserve'`,
  removeA: `curl -H @"$HOME/.ddns-token" -A 'my-script/1.0 me@example.org' \\
  'https://ddns.example.org/nic/update?myipv4=&myipv6=preserve'`,
  removeAAAA: `curl -H @"$HOME/.ddns-token" -A 'my-script/1.0 me@example.org' \\
  'https://ddns.example.org/nic/update?myipv4=preserve&myipv6='`,
  basic: `curl --netrc-file ~/.ddns-netrc -A 'my-script/1.0 me@example.org' \\
  'https://ddns.example.org/nic/update?hostname=home.dyn.example.org&myipv4=203.0.113.9&myipv6=preserve'`,
  urlFile:
    'url = "https://ddns.example.org/nic/update?username=home.dyn.example.org&password=TOKEN&myipv4=203.0.113.10&myipv6=2001:db8::10"',
  query: `curl -K "$HOME/.ddns-url" -A 'my-script/1.0 me@example.org'`,
  tokenFile: 'Authorization: Token TOKEN',
};

describe('docs/clients.md: the deSEC-style recipes are the ones the tests run', () => {
  it('shows every recipe verbatim', async () => {
    const doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
    for (const [name, text] of Object.entries(RECIPES)) expect(doc, name).to.include(text);
  });
});

for (const kind of ['knot', 'bind'] as const) {
  describe(`deSEC variants with curl and ddclient protocol=noip (${kind})`, function () {
    this.timeout(60000);
    let b: TlsBridge;

    before(async function () {
      requireInterop(this, ['curl', 'ddclient', 'openssl']);
      b = await TlsBridge.start({ kind, config: { http: { queryCredentials: true } } });
      await b.env.addAccount(ALICE.user, ALICE.password);
    });
    after(async () => b?.stop());

    async function host(label: string): Promise<string> {
      const h = uniqueHost(label);
      await b.env.addHost(h, ALICE.user);
      return h;
    }

    async function addToken(fqdn: string): Promise<string> {
      const token = (await b.env.cliOk(['token', 'add', fqdn])).trimEnd().split('\n').at(-1)!;
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      return token;
    }

    /** A recipe as the page shows it, for host `h` on the plain listener; curl's output parsed (`-i`). */
    async function run(dir: string, recipe: string, h: string) {
      const command = recipe
        .replace(/^curl /, 'curl -q -sS -i --max-time 10 ')
        .replaceAll(DOC_BASE, `http://127.0.0.1:${b.plainPort}`)
        .replaceAll(DOC_HOST, h);
      const proc = await runProcess('sh', ['-c', command], { cwd: dir, env: { HOME: dir } });
      expect(proc.code, proc.stderr).to.equal(0);
      return parseHttp(Buffer.from(proc.stdout));
    }

    const records = async (h: string) => ({ a: await b.env.ns.query(h, 'A'), aaaa: await b.env.ns.query(h, 'AAAA') });

    it('Authorization: Token; myipv4/myipv6 with preserve and the empty value', async () => {
      const h = await host('desec-token');
      const token = await addToken(h);
      const dir = await clientDir(b.env, 'curl');
      await writePrivateFile(path.join(dir, '.ddns-token'), `${RECIPES.tokenFile.replace('TOKEN', token)}\n`);

      const set = await run(dir, RECIPES.token, h);
      expect(set.statusLine).to.equal('HTTP/1.0 200 OK');
      expect(set.body).to.equal('good 203.0.113.7,2001:db8::7\n');
      expect(await records(h)).to.deep.equal({ a: ['203.0.113.7'], aaaa: ['2001:db8::7'] });

      expect((await run(dir, RECIPES.setA, h)).body).to.equal('good 203.0.113.8\n');
      expect(await records(h)).to.deep.equal({ a: ['203.0.113.8'], aaaa: ['2001:db8::7'] });

      expect((await run(dir, RECIPES.removeA, h)).body).to.equal('good\n');
      expect(await records(h)).to.deep.equal({ a: [], aaaa: ['2001:db8::7'] });

      expect((await run(dir, RECIPES.removeAAAA, h)).body).to.equal('good\n');
      expect(await records(h)).to.deep.equal({ a: [], aaaa: [] });
      // Asked again: nothing to change.
      expect((await run(dir, RECIPES.removeAAAA, h)).body).to.equal('nochg\n');
    });

    it('Basic credentials in deSEC form: myipv4 sets the A record, preserve keeps the AAAA', async () => {
      const h = await host('desec-basic');
      expect(
        (
          await b.env.get(`/nic/update?hostname=${h}&myip=2001:db8::9`, {
            auth: [ALICE.user, ALICE.password],
            port: b.plainPort,
          })
        ).body,
      ).to.equal('good 2001:db8::9\n');
      const dir = await clientDir(b.env, 'curl');
      await writePrivateFile(
        path.join(dir, '.ddns-netrc'),
        `machine 127.0.0.1 login ${ALICE.user} password ${ALICE.password}\n`,
      );
      const r = await run(dir, RECIPES.basic, h);
      expect(r.body).to.equal('good 203.0.113.9\n');
      expect(await records(h)).to.deep.equal({ a: ['203.0.113.9'], aaaa: ['2001:db8::9'] });
    });

    it('query credentials (http.queryCredentials on): good, and no log line holds the token', async () => {
      const h = await host('desec-query');
      const token = await addToken(h);
      const dir = await clientDir(b.env, 'curl');
      // The URL file names the doc's host and base: rewritten as run() rewrites a command.
      const url = RECIPES.urlFile
        .replace('TOKEN', token)
        .replaceAll(DOC_BASE, `http://127.0.0.1:${b.plainPort}`)
        .replaceAll(DOC_HOST, h);
      await writePrivateFile(path.join(dir, '.ddns-url'), `${url}\n`);
      const r = await run(dir, RECIPES.query, h);
      expect(r.body).to.equal('good 203.0.113.10,2001:db8::10\n');
      expect(await records(h)).to.deep.equal({ a: ['203.0.113.10'], aaaa: ['2001:db8::10'] });

      // A wrong password in the query: badauth, and neither secret in the log (at debug level).
      const wrong = 'wrong-query-password-1234';
      const bad = await b.env.get(`/nic/update?username=${ALICE.user}&password=${wrong}&hostname=${h}`, {
        port: b.plainPort,
      });
      expect(bad.statusLine).to.equal('HTTP/1.0 401 Unauthorized');
      expect(bad.body).to.equal('badauth\n');
      const config = JSON.parse(await readFile(b.env.configPath, 'utf8')) as { log?: { level?: string } };
      expect(config.log?.level, 'serve logs at debug level').to.equal('debug');
      const log = b.logText();
      expect(log).to.include('"msg":"listening"');
      expect(log).not.to.include(token);
      expect(log).not.to.include(wrong);
      expect(log).not.to.include('password=');
    });

    it('ddclient 3.10 protocol=noip over HTTPS: system=noip, SUCCESS, the A record on the primary', async function () {
      requirePerlModulesOrSkip(this, ['IO::Socket::SSL']);
      const a = await host('noip');
      const c = await host('noip');
      const config = [
        'protocol=noip',
        `server=127.0.0.1:${b.tlsPort}`,
        `ssl_ca_file=${b.ca.caFile}`,
        'timeout=10',
        'use=ip, ip=198.51.100.91',
        `login=${ALICE.user}`,
        `password=${ALICE.password}`,
        `${a},${c}`,
        '',
      ].join('\n');
      const dir = await clientDir(b.env, 'ddclient');
      const r = await runDdclient(dir, config);
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.include('CONNECTED:  using SSL');
      // One request for the group (its order is ddclient's).
      const sent = /SENDING: +GET \/nic\/update\?system=noip&hostname=([^&]+)&myip=198\.51\.100\.91 HTTP\/1\.1/.exec(
        out,
      );
      expect(sent, out).not.to.equal(null);
      expect(sent![1]!.split(',').sort()).to.deep.equal([a, c].sort());
      for (const h of [a, c]) expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 198.51.100.91`);
      expect(out).not.to.match(/FAILED|badsys/);
      for (const h of [a, c]) expect(await b.env.ns.query(h, 'A')).to.deep.equal(['198.51.100.91']);

      // Unchanged and asked again: nochg, which ddclient's noip counts as good (with its warning).
      const again = await runDdclient(dir, config);
      expect(again.code, redact(again.output)).to.equal(0);
      expect(again.output).to.include(`WARNING:  updating ${a}: nochg: No update required`);
    });
  });
}
