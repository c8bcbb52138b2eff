/**
 * dynv6's update API (docs/protocol.md, "dynv6") with curl against the real `ddns-bridge serve`, redis-server and
 * knotd or named; the records read back from the primary with dig. Every request form the docs name, `-` removal,
 * `auto` from an IPv4 and an IPv6 client (X-Forwarded-For from the trusted loopback proxy), a prefix moving a linked
 * host, the refusals, inadyn 2.10's custom provider; and the recipes of docs/clients.md, "dynv6", run as written.
 * The token travels in the URL, so curl reads the URL from a config file (mode 0600), never from argv.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort, makeTempDir, removeDir, requireBinariesOrSkip, writePrivateFile } from '../../src/lab/index.js';
import { parseHttp, ROOT, type BridgeEnv, type HttpResult } from '../support/bridge.js';
import {
  clientDir,
  inadynConfig,
  inadynRequests,
  requireInterop,
  runInadyn,
  runProcess,
  startInteropEnv,
  uniqueHost,
} from './support.js';

const ACCOUNT = { name: 'vera', password: 'vera-account-pw' };
const BASE = '/ddns';
const IID = '::1234:5678:9abc:def0';
const DOC_SERVER = 'https://ddns.example.org';

/** The recipes of docs/clients.md, "dynv6": the curl config file's line, with H, TOKEN and the server as written. */
export const DYNV6_RECIPES = {
  auto: `url = "${DOC_SERVER}/api/update?zone=H&token=TOKEN&ipv4=auto&ipv6=auto"`,
  addresses: `url = "${DOC_SERVER}/api/update?zone=H&token=TOKEN&ipv4=203.0.113.7&ipv6=2001:db8::7"`,
  removeIpv6: `url = "${DOC_SERVER}/api/update?zone=H&token=TOKEN&ipv6=-"`,
  prefix: `url = "${DOC_SERVER}/api/update?hostname=H&token=TOKEN&ipv4=auto&ipv6prefix=2001:db8:1200:3400::/56"`,
} as const;
/** inadyn 2.10's `custom` provider: the path (under basePath) and the reply it takes for success. */
export const DYNV6_INADYN_PATH = '/api/update?hostname=%h&token=%p&ipv4=%i';
export const DYNV6_INADYN_RESPONSE = 'ddns-response = { "addresses updated", "addresses unchanged" }';
/** The command of the recipes (the config file's path as written in the docs). */
export const DYNV6_COMMAND = 'curl -fsS -K /etc/ddns/dynv6.curl';

for (const kind of ['knot', 'bind'] as const) {
  describe(`dynv6 update API with curl and inadyn (${kind})`, function () {
    this.timeout(90_000);
    let env: BridgeEnv;
    let adminPort: number;
    let adminDir: string | undefined;

    before(async function () {
      requireInterop(this, ['curl']);
      // The loopback client is a trusted proxy: X-Forwarded-For gives it the address `auto` takes.
      adminPort = await freePort();
      adminDir = await makeTempDir('dynv6-admin-');
      const tokenFile = path.join(adminDir, 'admin.token');
      await writePrivateFile(tokenFile, 'a'.repeat(64) + '\n');
      env = await startInteropEnv(kind, {
        basePath: BASE,
        trustedProxies: ['127.0.0.1'],
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
      });
      await env.addAccount(ACCOUNT.name, ACCOUNT.password);
    });

    after(async () => {
      await env?.stop();
      if (adminDir) await removeDir(adminDir);
    });

    async function hostWithToken(label: string, extra: string[] = []): Promise<{ h: string; token: string }> {
      const h = uniqueHost(label);
      await env.addHost(h, ACCOUNT.name);
      const token = (await env.cliOk(['token', 'add', h, ...extra])).trimEnd().split('\n').at(-1)!;
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      return { h, token };
    }

    /** The documented command, as written, with the recipe's config file (server, H, TOKEN filled in). */
    async function recipe(line: string, h: string, token: string, xff?: string) {
      const dir = await clientDir(env, 'dynv6');
      const url = `http://127.0.0.1:${env.port}${BASE}`;
      const filled = line.replace(DOC_SERVER, url).replace('=H&', `=${h}&`).replace('TOKEN', token);
      const file = path.join(dir, 'dynv6.curl');
      await writePrivateFile(file, filled + '\n' + (xff ? `header = "X-Forwarded-For: ${xff}"\n` : ''));
      const args = DYNV6_COMMAND.split(' ').slice(1);
      args[args.indexOf('/etc/ddns/dynv6.curl')] = file;
      return runProcess('curl', args, { cwd: dir });
    }

    /** Any request form through curl (`-i`: the whole reply), the URL from a config file. */
    async function curl(pathAndQuery: string, xff?: string, form?: string): Promise<HttpResult> {
      const dir = await clientDir(env, 'dynv6-form');
      const file = path.join(dir, 'request.curl');
      const lines = [`url = "http://127.0.0.1:${env.port}${pathAndQuery}"`];
      if (xff) lines.push(`header = "X-Forwarded-For: ${xff}"`);
      if (form) lines.push(`data = "${form}"`);
      await writePrivateFile(file, lines.join('\n') + '\n');
      const proc = await runProcess('curl', ['-q', '-sS', '-i', '--max-time', '10', '-K', file], { cwd: dir });
      expect(proc.code, proc.stderr).to.equal(0);
      return parseHttp(Buffer.from(proc.stdout, 'latin1'));
    }

    const q = (h: string, token: string, rest = '') => `${BASE}/api/update?zone=${h}&token=${token}${rest}`;
    const a = (h: string) => env.ns.query(h, 'A');
    const aaaa = (h: string) => env.ns.query(h, 'AAAA');

    it('recipe "auto": an IPv4 client sets A; an IPv6 client sets AAAA and leaves A; again: unchanged', async () => {
      const { h, token } = await hostWithToken('auto');
      const first = await recipe(DYNV6_RECIPES.auto, h, token, '198.51.100.40');
      expect(first.code, first.stderr).to.equal(0);
      expect(first.stdout).to.equal('addresses updated');
      expect(await a(h)).to.deep.equal(['198.51.100.40']);
      expect(await aaaa(h)).to.deep.equal([]);

      const v6 = await recipe(DYNV6_RECIPES.auto, h, token, '2001:db8:40::1');
      expect(v6.stdout, v6.stderr).to.equal('addresses updated');
      expect(await aaaa(h)).to.deep.equal(['2001:db8:40::1']);
      expect(await a(h)).to.deep.equal(['198.51.100.40']);

      const again = await recipe(DYNV6_RECIPES.auto, h, token, '2001:db8:40::1');
      expect(again.stdout, again.stderr).to.equal('addresses unchanged');
    });

    it('recipes "addresses" and "ipv6=-": both families set, then the AAAA removed and the A kept', async () => {
      const { h, token } = await hostWithToken('addr');
      const set = await recipe(DYNV6_RECIPES.addresses, h, token);
      expect(set.stdout, set.stderr).to.equal('addresses updated');
      expect(await a(h)).to.deep.equal(['203.0.113.7']);
      expect(await aaaa(h)).to.deep.equal(['2001:db8::7']);

      const removed = await recipe(DYNV6_RECIPES.removeIpv6, h, token);
      expect(removed.stdout, removed.stderr).to.equal('addresses updated');
      expect(await aaaa(h)).to.deep.equal([]);
      expect(await a(h)).to.deep.equal(['203.0.113.7']);
      expect((await recipe(DYNV6_RECIPES.removeIpv6, h, token)).stdout).to.equal('addresses unchanged');
    });

    it('recipe "prefix": the linked host follows; ipv6=ADDR/64 moves it again; ipv6prefix=- sends none', async () => {
      const { h, token } = await hostWithToken('router');
      const child = uniqueHost('lan');
      await env.addHost(child, ACCOUNT.name);
      await env.cliOk(['host', 'link', child, '--to', h, '--iid', IID]);

      const first = await recipe(DYNV6_RECIPES.prefix, h, token, '198.51.100.41');
      expect(first.stdout, first.stderr).to.equal('addresses updated');
      expect(await a(h)).to.deep.equal(['198.51.100.41']);
      expect(await aaaa(child)).to.deep.equal(['2001:db8:1200:3400:1234:5678:9abc:def0']);

      const moved = await curl(q(h, token, '&ipv4=auto&ipv6=2001:db8:aa:1::1/64'), '198.51.100.41');
      expect([moved.status, moved.body]).to.deep.equal([200, 'addresses updated']);
      expect(await aaaa(h)).to.deep.equal(['2001:db8:aa:1::1']);
      expect(await aaaa(child)).to.deep.equal(['2001:db8:aa:1:1234:5678:9abc:def0']);
      expect((await env.hostJson(h)).prefix).to.equal('2001:db8:aa:1::/64');

      // `-`: no prefix: the linked host keeps its address.
      const none = await curl(q(h, token, '&ipv4=auto&ipv6=2001:db8:aa:1::2&ipv6prefix=-'), '198.51.100.41');
      expect([none.status, none.body]).to.deep.equal([200, 'addresses updated']);
      expect(await aaaa(h)).to.deep.equal(['2001:db8:aa:1::2']);
      expect(await aaaa(child)).to.deep.equal(['2001:db8:aa:1:1234:5678:9abc:def0']);

      // ipv6prefix alone: the client address fills its family (no ipv4, no ipv6 given), the linked host moves.
      const alone = await curl(q(h, token, '&ipv6prefix=2001:db8:bb::/48'), '198.51.100.45');
      expect([alone.status, alone.body]).to.deep.equal([200, 'addresses updated']);
      expect(await a(h)).to.deep.equal(['198.51.100.45']);
      expect(await aaaa(h)).to.deep.equal(['2001:db8:aa:1::2']);
      expect(await aaaa(child)).to.deep.equal(['2001:db8:bb:0:1234:5678:9abc:def0']);
    });

    it('the other forms: hostname= and Hostname=, the root path, no address (the client), empty (kept), ipv4=-', async () => {
      const { h, token } = await hostWithToken('forms');
      const plain = await curl(`/api/update?hostname=${h}&token=${token}`, '198.51.100.42');
      expect([plain.status, plain.body]).to.deep.equal([200, 'addresses updated']);
      expect(plain.headers['content-type']).to.equal('text/plain; charset=utf-8');
      expect(plain.raw.toString('latin1')).to.match(/^HTTP\/1\.0 200 OK\r\n/);
      expect(await a(h)).to.deep.equal(['198.51.100.42']);

      const six = await curl(`${BASE}/api/update?Hostname=${h}&token=${token}&ipv6=2001:db8:42::1`, '198.51.100.43');
      expect(six.body).to.equal('addresses updated');
      expect(await a(h)).to.deep.equal(['198.51.100.42']);
      expect(await aaaa(h)).to.deep.equal(['2001:db8:42::1']);

      // Empty: both left as they are, the client address fills nothing.
      const kept = await curl(q(h, token, '&ipv4=&ipv6='), '198.51.100.44');
      expect([kept.status, kept.body]).to.deep.equal([200, 'addresses unchanged']);
      expect(await a(h)).to.deep.equal(['198.51.100.42']);

      // ipv4=auto from an IPv6 client: nothing to set.
      const v4auto = await curl(q(h, token, '&ipv4=auto'), '2001:db8:42::9');
      expect(v4auto.body).to.equal('addresses unchanged');

      // POST with a form body.
      const posted = await curl(`${BASE}/api/update`, undefined, `zone=${h}&token=${token}&ipv4=203.0.113.44`);
      expect([posted.status, posted.body]).to.deep.equal([200, 'addresses updated']);
      expect(await a(h)).to.deep.equal(['203.0.113.44']);

      const gone = await curl(q(h, token, '&ipv4=-'));
      expect([gone.status, gone.body]).to.deep.equal([200, 'addresses updated']);
      expect(await a(h)).to.deep.equal([]);
      expect(await aaaa(h)).to.deep.equal(['2001:db8:42::1']);
    });

    it('refusals: a wrong token and an unknown host alike 401; 400, 403, 429 with Retry-After', async () => {
      const { h, token } = await hostWithToken('refused');
      const other = await hostWithToken('other');
      const wrong = await curl(q(h, 'x'.repeat(32), '&ipv4=203.0.113.9'));
      const unknown = await curl(q(uniqueHost('nobody'), token, '&ipv4=203.0.113.9'));
      const misplaced = await curl(q(other.h, token, '&ipv4=203.0.113.9'));
      const missing = await curl(`${BASE}/api/update?zone=${h}&ipv4=203.0.113.9`);
      // The same bytes: nothing tells a registered host from an unknown one.
      expect(unknown.raw.toString('latin1')).to.equal(wrong.raw.toString('latin1'));
      expect(misplaced.raw.toString('latin1')).to.equal(wrong.raw.toString('latin1'));
      for (const r of [wrong, unknown, misplaced, missing]) {
        expect([r.status, r.body]).to.deep.equal([401, 'invalid authentication token']);
        expect(r.headers).to.not.have.property('www-authenticate');
      }
      expect(await a(h)).to.deep.equal([]);
      expect(await a(other.h)).to.deep.equal([]);

      for (const [rest, body] of [
        ['&ipv4=203.0.113.300', 'invalid ipv4 address'],
        ['&ipv6=6to4', '6to4 is not supported'],
        ['&ipv6prefix=2001:db8::/96', 'invalid ipv6 prefix'],
      ] as const) {
        const r = await curl(q(h, token, rest));
        expect([r.status, r.body], rest).to.deep.equal([400, body]);
      }
      const noZone = await curl(`${BASE}/api/update?token=${token}&ipv4=203.0.113.9`);
      expect([noZone.status, noZone.body]).to.deep.equal([400, 'zone required']);

      const acme = await hostWithToken('acme', ['--acme-only']);
      const scoped = await curl(q(acme.h, acme.token, '&ipv4=203.0.113.9'));
      expect([scoped.status, scoped.body]).to.deep.equal([403, 'token not allowed for this zone']);

      await env.cliOk(['host', 'close', other.h]);
      const closed = await curl(q(other.h, other.token, '&ipv4=203.0.113.9'));
      expect([closed.status, closed.body]).to.deep.equal([403, 'zone is not active']);

      await env.cliOk(['host', 'block', h]);
      const blocked = await curl(q(h, token, '&ipv4=203.0.113.9'));
      expect([blocked.status, blocked.body]).to.deep.equal([429, 'too many requests']);
      expect(blocked.headers['retry-after']).to.equal('3600');
      expect(await a(h)).to.deep.equal([]);
    });

    it('inadyn 2.10, custom provider with the dynv6 path and ddns-response: updated, then unchanged', async function () {
      requireBinariesOrSkip(this, ['inadyn']);
      const { h, token } = await hostWithToken('inadyn');
      const config = (ip: string) =>
        inadynConfig({
          port: env.port,
          username: h,
          password: token,
          hostnames: [h],
          address: { fixed: ip },
          ddnsPath: BASE + DYNV6_INADYN_PATH,
        }).replace('    hostname =', `    ${DYNV6_INADYN_RESPONSE}\n    hostname =`);
      const dir = await clientDir(env, 'inadyn-dynv6');
      const first = await runInadyn(dir, config('203.0.113.61'));
      expect(inadynRequests(first.output)[0], first.output).to.include(
        `GET ${BASE}/api/update?hostname=${h}&token=${token}&ipv4=203.0.113.61 HTTP/1.0`,
      );
      expect(first.output).to.include(`Successful alias table update for ${h} => new IP# 203.0.113.61`);
      expect(first.code, first.output).to.equal(0);
      expect(await a(h)).to.deep.equal(['203.0.113.61']);
      const again = await runInadyn(dir, config('203.0.113.61'));
      expect(again.output).to.include('addresses unchanged');
      expect(again.code, again.output).to.equal(0);
    });

    it("/metrics: route dynv6, counted under the update path's tokens", async () => {
      const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      const count = (token: string, status: number) =>
        new RegExp(
          `^ddns_bridge_http_requests_total\\{route="dynv6",token="${token}",status="${status}"\\} [1-9]`,
          'm',
        );
      for (const [token, status] of [
        ['good', 200],
        ['nochg', 200],
        ['badauth', 401],
        ['!yours', 403],
        ['!active', 403],
        ['abuse', 429],
        ['other', 400],
      ] as const)
        expect(text).to.match(count(token, status));
    });
  });
}

describe('docs/clients.md: the dynv6 recipes are the ones the tests run', () => {
  it('shows the command, each config line and the inadyn lines verbatim', async () => {
    const doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
    expect(doc).to.include(DYNV6_COMMAND);
    for (const line of Object.values(DYNV6_RECIPES)) expect(doc).to.include(line);
    expect(doc).to.include(`ddns-path = "${DYNV6_INADYN_PATH}"`);
    expect(doc).to.include(DYNV6_INADYN_RESPONSE);
  });
});
