/**
 * The real ddclient 3.10 (Debian), `protocol=dyndns2`, run once in the foreground against the
 * real bridge; records checked on the primary (Knot and BIND).
 */
import { expect } from 'chai';
import type { BridgeEnv } from '../support/bridge.js';
import {
  clientDir,
  ddclientConfig,
  redact,
  requireInterop,
  runDdclient,
  startInteropEnv,
  uniqueHost,
  MAIL,
  type DdclientOptions,
} from './support.js';

const ALICE = { login: 'alice', password: 'alice-ddclient-pw' };

for (const kind of ['knot', 'bind'] as const) {
  describe(`ddclient 3.10 against the bridge (${kind})`, function () {
    this.timeout(30000);
    let env: BridgeEnv;

    before(async function () {
      requireInterop(this, ['ddclient']);
      env = await startInteropEnv(kind);
      await Promise.all([env.addAccount(ALICE.login, ALICE.password), env.addAccount('bob', 'bob-ddclient-pw')]);
    });
    after(async () => env?.stop());

    /** `n` new hosts of `owner`, added side by side (one CLI process each). */
    async function hosts(n: number, owner = ALICE.login): Promise<string[]> {
      const out = Array.from({ length: n }, () => uniqueHost('ddc'));
      await Promise.all(out.map((h) => env.addHost(h, owner)));
      return out;
    }
    const conf = (ip: string, hostLines: string[], creds = ALICE): string =>
      ddclientConfig({ port: env.port, ip, hostLines, ...creds } satisfies DdclientOptions);
    const run = async (config: string, keepCache = false) =>
      runDdclient(await clientDir(env, 'ddclient'), config, { keepCache });

    it('one host: good, SUCCESS reported, exit 0, the A record on the primary', async () => {
      const [h] = await hosts(1);
      const r = await run(conf('203.0.113.5', [h!]));
      const out = redact(r.output);
      const received = r.stdout;
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`GET /dyndns/update?system=dyndns&hostname=${h}&myip=203.0.113.5 HTTP/1.1`);
      expect(out).to.include('User-Agent: ddclient/3.10.0');
      expect(received, out).to.match(/RECEIVE:\s+HTTP\/1\.0 200 OK\r?\n/);
      expect(received, out).to.match(/RECEIVE:\s+good 203\.0\.113\.5\r?\n/);
      expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 203.0.113.5`);
      expect(out).not.to.match(/FAILED|WARNING/);
      expect(await env.ns.query(h!, 'A')).to.deep.equal(['203.0.113.5']);
    });

    it('two hosts in one request (a,b): two reply lines, both applied', async () => {
      const [a, b] = await hosts(2);
      const r = await run(conf('203.0.113.6', [`${a},${b}`]));
      const out = redact(r.output);
      const received = r.stdout;
      expect(r.code, out).to.equal(0);
      expect(out.match(/SENDING:\s+GET /g), out).to.have.length(1);
      expect(out).to.include(`hostname=${a},${b}&myip=203.0.113.6 HTTP/1.1`);
      expect(received, out).to.match(/RECEIVE:\s+good 203\.0\.113\.6\r?\nRECEIVE:\s+good 203\.0\.113\.6\r?\n/);
      expect(out).to.include(`SUCCESS:  updating ${a}: good: IP address set to 203.0.113.6`);
      expect(out).to.include(`SUCCESS:  updating ${b}: good: IP address set to 203.0.113.6`);
      expect(await env.ns.query(a!, 'A')).to.deep.equal(['203.0.113.6']);
      expect(await env.ns.query(b!, 'A')).to.deep.equal(['203.0.113.6']);
    });

    it('wildcard=yes, mx, backupmx=yes and backupmx=no (one request per option group)', async () => {
      const [w, m] = await hosts(2);
      const r = await run(
        conf('203.0.113.7', [`wildcard=yes, mx=${MAIL}, backupmx=yes ${w}`, `mx=${MAIL}, backupmx=no ${m}`]),
      );
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`hostname=${w}&myip=203.0.113.7&wildcard=ON&mx=${MAIL}&backmx=YES HTTP/1.1`);
      expect(out).to.include(`hostname=${m}&myip=203.0.113.7&mx=${MAIL}&backmx=NO HTTP/1.1`);
      expect(out).to.include(`SUCCESS:  updating ${w}: good: IP address set to 203.0.113.7`);
      expect(out).to.include(`SUCCESS:  updating ${m}: good: IP address set to 203.0.113.7`);
      expect(await env.ns.query(w!, 'A')).to.deep.equal(['203.0.113.7']);
      expect(await env.ns.query(`anything.${w}`, 'A')).to.deep.equal(['203.0.113.7']);
      expect(await env.ns.query(w!, 'MX')).to.deep.equal([`10 ${w}.`, `20 ${MAIL}.`]);
      expect(await env.ns.query(m!, 'MX')).to.deep.equal([`10 ${MAIL}.`]);
      expect(await env.ns.query(`anything.${m}`, 'A')).to.deep.equal([]);
    });

    it('an IPv6 ip= publishes AAAA and leaves the A record alone', async () => {
      const [h] = await hosts(1);
      expect((await run(conf('203.0.113.8', [h!]))).code).to.equal(0);
      const r = await run(conf('2001:db8::8', [h!]));
      const out = redact(r.output);
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`hostname=${h}&myip=2001:db8::8 HTTP/1.1`);
      expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 2001:db8::8`);
      expect(await env.ns.query(h!, 'AAAA')).to.deep.equal(['2001:db8::8']);
      expect(await env.ns.query(h!, 'A')).to.deep.equal(['203.0.113.8']);
    });

    it('a wrong password: ddclient reports the authorization failure, exit 1, DNS unchanged', async () => {
      const [h] = await hosts(1);
      const r = await run(conf('203.0.113.9', [h!], { login: ALICE.login, password: 'not-the-password' }));
      const out = redact(r.output);
      expect(r.code, out).to.equal(1);
      expect(out).to.include(`FAILED:   updating ${h}: authorization failed (HTTP/1.0 401 Unauthorized`);
      expect(out).to.match(/WWW-Authenticate: Basic realm="ddns-bridge"/);
      expect(out).not.to.include('SUCCESS');
      expect(await env.ns.query(h!, 'A')).to.deep.equal([]);
    });

    it('the same address again (cache removed): nochg, no DNS traffic; with the cache kept it does not send', async () => {
      const [h] = await hosts(1);
      expect((await run(conf('203.0.113.10', [h!]))).code).to.equal(0);
      const serial = await env.ns.serial();
      const r = await run(conf('203.0.113.10', [h!]));
      const out = redact(r.output);
      const received = r.stdout;
      expect(r.code, out).to.equal(0);
      expect(received, out).to.match(/RECEIVE:\s+nochg 203\.0\.113\.10\r?\n/);
      expect(out).to.include(`WARNING:  updating ${h}: nochg: No update required;`);
      expect(out).not.to.match(/FAILED/);
      expect(await env.ns.serial()).to.equal(serial);
      expect(await env.ns.query(h!, 'A')).to.deep.equal(['203.0.113.10']);

      // ddclient's own cache suppresses the request entirely
      const dir = await clientDir(env, 'ddclient');
      await runDdclient(dir, conf('203.0.113.10', [h!]));
      const cached = await runDdclient(dir, conf('203.0.113.10', [h!]), { keepCache: true });
      expect(cached.code).to.equal(0);
      expect(cached.output).not.to.include('SENDING:');
      expect(cached.output).to.include(`${h}: skipped: IP address was already set to 203.0.113.10.`);
    });

    it('dnserr (primary down): ddclient reports the DNS error, exit 1, the old record stays', async () => {
      const [h] = await hosts(1);
      expect((await run(conf('203.0.113.12', [h!]))).code).to.equal(0);
      await env.ns.stop();
      let r;
      try {
        r = await run(conf('203.0.113.13', [h!]));
      } finally {
        await env.ns.start();
      }
      const out = redact(r.output);
      expect(r.code, out).to.equal(1);
      expect(r.stdout, out).to.match(/RECEIVE:\s+dnserr\r?\n/);
      expect(out).to.include(`FAILED:   updating ${h}: dnserr: System error: DNS error encountered.`);
      expect(await env.ns.query(h!, 'A')).to.deep.equal(['203.0.113.12']);
    });

    it('per-host tokens in one request: good for ours, nohost and !yours reported as FAILED', async () => {
      const [mine] = await hosts(1);
      const [bobs] = await hosts(1, 'bob');
      const unknown = uniqueHost('unregistered');
      const r = await run(conf('203.0.113.11', [`${mine},${unknown},${bobs}`]));
      const out = redact(r.output);
      const received = r.stdout;
      expect(r.code, out).to.equal(1);
      // ddclient orders the names itself: the reply lines follow the order it sent
      const sent = /hostname=([^&]+)&/.exec(out)![1]!.split(',');
      const want: Record<string, string> = { [mine!]: 'good 203.0.113.11', [unknown]: 'nohost', [bobs!]: '!yours' };
      const bodyLines = [...received.matchAll(/^RECEIVE:\s+(good \S+|nohost|!yours)$/gm)].map((m) => m[1]);
      expect(bodyLines, out).to.deep.equal(sent.map((h) => want[h]));
      expect(out).to.include(`SUCCESS:  updating ${mine}: good: IP address set to 203.0.113.11`);
      expect(out).to.include(
        `FAILED:   updating ${unknown}: nohost: The hostname specified does not exist in the database`,
      );
      expect(out).to.include(
        `FAILED:   updating ${bobs}: !yours: The hostname specified exists, but not under the username currently being used`,
      );
      expect(await env.ns.query(mine!, 'A')).to.deep.equal(['203.0.113.11']);
      expect(await env.ns.query(bobs!, 'A')).to.deep.equal([]);
    });
  });
}
