/**
 * The real inadyn 2.10 (Debian), `custom` provider, run once in the foreground against the
 * real bridge; records checked on the primary (Knot and BIND).
 */
import { expect } from 'chai';
import type { BridgeEnv } from '../support/bridge.js';
import {
  clientDir,
  inadynConfig,
  inadynRequests,
  redact,
  requireInterop,
  runInadyn,
  startInteropEnv,
  uniqueHost,
  type InadynOptions,
} from './support.js';

const ALICE = { username: 'alice', password: 'alice-inadyn-pw' };

for (const kind of ['knot', 'bind'] as const) {
  describe(`inadyn 2.10 against the bridge (${kind})`, function () {
    this.timeout(30000);
    let env: BridgeEnv;

    before(async function () {
      requireInterop(this, ['inadyn']);
      env = await startInteropEnv(kind);
      await env.addAccount(ALICE.username, ALICE.password);
    });
    after(async () => env?.stop());

    async function host(): Promise<string> {
      const h = uniqueHost('inadyn');
      await env.addHost(h, ALICE.username);
      return h;
    }
    const run = async (o: Omit<InadynOptions, 'port' | 'username' | 'password'>, creds = ALICE) =>
      runInadyn(await clientDir(env, 'inadyn'), inadynConfig({ port: env.port, ...creds, ...o }));

    it('two host names: one HTTP/1.0 request each, Host without port, both published', async () => {
      const a = await host();
      const b = await host();
      const r = await run({ hostnames: [a, b], address: { fixed: '203.0.113.21' } });
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      const requests = inadynRequests(r.output);
      expect(
        requests.map((q) => q.split(/\r?\n/)[0]),
        out,
      ).to.deep.equal([
        `GET /dyndns/update?hostname=${a}&myip=203.0.113.21 HTTP/1.0`,
        `GET /dyndns/update?hostname=${b}&myip=203.0.113.21 HTTP/1.0`,
      ]);
      for (const q of requests) {
        expect(q).to.match(/^Host: 127\.0\.0\.1\r?$/m);
        expect(q).to.match(/^Authorization: Basic /m);
        expect(q).to.match(/^User-Agent: inadyn\/2\.10\.0 /m);
      }
      expect(out.match(/DDNS server response: HTTP\/1\.0 200 OK/g)).to.have.length(2);
      expect(out).to.include(`Successful alias table update for ${a} => new IP# 203.0.113.21`);
      expect(out).to.include(`Successful alias table update for ${b} => new IP# 203.0.113.21`);
      expect(await env.ns.query(a, 'A')).to.deep.equal(['203.0.113.21']);
      expect(await env.ns.query(b, 'A')).to.deep.equal(['203.0.113.21']);
    });

    it('checkip through our /checkip (verify-address = false): the detected address is published', async () => {
      const h = await host();
      const r = await run({ hostnames: [h], address: { checkip: '/checkip' } });
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.include('Querying DDNS checkip server for my public IP#: GET /checkip HTTP/1.0');
      expect(out).to.include('Current IP Address: 127.0.0.1');
      expect(out).to.include('Current IP# 127.0.0.1 at custom');
      expect(out).not.to.include('ipify');
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 127.0.0.1`);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['127.0.0.1']);
    });

    it('allow-ipv6 = true with an IPv6 address publishes AAAA', async () => {
      const h = await host();
      const r = await run({ hostnames: [h], address: { fixed: '2001:db8::21' }, allowIpv6: true });
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      // inadyn percent-encodes the colons, with lowercase hex digits
      expect(inadynRequests(r.output)[0]!.split(/\r?\n/)[0], out).to.equal(
        `GET /dyndns/update?hostname=${h}&myip=2001%3adb8%3a%3a21 HTTP/1.0`,
      );
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 2001:db8::21`);
      expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::21']);
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);
    });

    it('a wrong password: inadyn reports the authentication failure and exits 50, DNS unchanged', async () => {
      const h = await host();
      const r = await run(
        { hostnames: [h], address: { fixed: '203.0.113.22' } },
        { username: ALICE.username, password: 'not-the-password' },
      );
      const out = redact(r.output);
      expect(r.code, out).to.equal(50);
      expect(out).to.include('[401 Unauthorized] badauth');
      expect(out).to.include('Error code 50: Authentication failure');
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);
    });

    it('the same address again (fresh cache): nochg counts as success, no DNS traffic', async () => {
      const h = await host();
      expect((await run({ hostnames: [h], address: { fixed: '203.0.113.23' } })).code).to.equal(0);
      const serial = await env.ns.serial();
      const r = await run({ hostnames: [h], address: { fixed: '203.0.113.23' } });
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.match(/\nnochg 203\.0\.113\.23\n/);
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 203.0.113.23`);
      expect(await env.ns.serial()).to.equal(serial);
    });

    it('dnserr (primary down): inadyn 2.10 treats it as fatal and exits 48 (-C keeps it running)', async () => {
      const h = await host();
      expect((await run({ hostnames: [h], address: { fixed: '203.0.113.25' } })).code).to.equal(0);
      await env.ns.stop();
      let r;
      try {
        r = await run({ hostnames: [h], address: { fixed: '203.0.113.26' } });
      } finally {
        await env.ns.start();
      }
      const out = redact(r.output);
      expect(r.code, out).to.equal(48);
      expect(out).to.include('[200 OK] dnserr');
      expect(out).to.include('Error code 48: DDNS server response not OK');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.25']);
    });

    it('an unregistered name: inadyn reports nohost and exits 48', async () => {
      const h = uniqueHost('unregistered');
      const r = await run({ hostnames: [h], address: { fixed: '203.0.113.24' } });
      const out = redact(r.output);
      expect(r.code, out).to.equal(48);
      expect(out).to.include('[200 OK] nohost');
      expect(out).to.include('Error code 48: DDNS server response not OK');
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);
    });
  });
}
