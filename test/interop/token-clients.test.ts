/**
 * Scoped update tokens with the real clients: ddclient 3.10 (`protocol=dyndns2`) and inadyn
 * 2.10 (`custom`) keep a token from `ddns-bridge token add` as their password, with the host's
 * FQDN (or the account's name) as the login, against the real serve process; the records are
 * read back from the primary (Knot and BIND). See docs/security.md, "Update tokens".
 */
import { expect } from 'chai';
import type { BridgeEnv } from '../support/bridge.js';
import {
  clientDir,
  ddclientConfig,
  inadynConfig,
  inadynRequests,
  redact,
  requireInterop,
  runDdclient,
  runInadyn,
  startInteropEnv,
  uniqueHost,
  type InadynOptions,
} from './support.js';

const ACCOUNT = { name: 'carol', password: 'carol-account-pw' };

interface Token {
  id: string;
  token: string;
}

interface ListedToken {
  id: string;
  host: string;
  account: string;
  lastUsed: string | null;
}

for (const kind of ['knot', 'bind'] as const) {
  describe(`update tokens with ddclient and inadyn (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;

    before(async function () {
      requireInterop(this, ['ddclient', 'inadyn']);
      env = await startInteropEnv(kind);
      await env.addAccount(ACCOUNT.name, ACCOUNT.password);
    });
    after(async () => env?.stop());

    async function host(label: string): Promise<string> {
      const h = uniqueHost(label);
      await env.addHost(h, ACCOUNT.name);
      return h;
    }

    /** `token add FQDN`: the token alone on the last line, its id on the first. */
    async function addToken(fqdn: string): Promise<Token> {
      const lines = (await env.cliOk(['token', 'add', fqdn, '--note', `${kind} interop`])).trimEnd().split('\n');
      const token = lines.at(-1)!;
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      const id = /^token ([0-9a-f]{12}) for /.exec(lines[0]!)?.[1];
      expect(id, lines[0]).to.be.a('string');
      return { id: id!, token };
    }

    async function listed(fqdn: string): Promise<ListedToken[]> {
      return JSON.parse(await env.cliOk(['token', 'list', fqdn, '--json'])) as ListedToken[];
    }

    const ddclient = async (ip: string, fqdn: string, login: string, password: string) => {
      const config = ddclientConfig({ port: env.port, ip, hostLines: [fqdn], login, password });
      return runDdclient(await clientDir(env, 'ddclient'), config);
    };

    const inadyn = async (o: Omit<InadynOptions, 'port'>) =>
      runInadyn(await clientDir(env, 'inadyn'), inadynConfig({ port: env.port, ...o }));

    /** The output of a client run, credentials blanked and the token itself masked. */
    const shown = (output: string, t: Token) => redact(output).split(t.token).join('<token>');

    it('ddclient, login = the FQDN, password = the token: good, the A record, the last use listed', async () => {
      const h = await host('tok-ddc');
      const t = await addToken(h);
      const [fresh] = await listed(h);
      expect(fresh).to.include({ id: t.id, host: h, account: ACCOUNT.name, lastUsed: null });

      const startedAt = Date.now();
      const r = await ddclient('203.0.113.31', h, h, t.token);
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`GET /dyndns/update?system=dyndns&hostname=${h}&myip=203.0.113.31 HTTP/1.1`);
      expect(r.stdout, out).to.match(/RECEIVE:\s+HTTP\/1\.0 200 OK\r?\n/);
      expect(r.stdout, out).to.match(/RECEIVE:\s+good 203\.0\.113\.31\r?\n/);
      expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 203.0.113.31`);
      expect(out).not.to.match(/FAILED|WARNING/);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.31']);

      const [used] = await listed(h);
      expect(used, JSON.stringify(used)).to.include({ id: t.id, host: h });
      expect(used!.lastUsed, JSON.stringify(used)).to.be.a('string');
      const at = Date.parse(used!.lastUsed!);
      expect(at).to.be.within(startedAt - 1000, Date.now() + 1000);
    });

    it('ddclient, login = the account name, password = the token: good, the A record', async () => {
      const h = await host('tok-ddc-acct');
      const t = await addToken(h);
      const r = await ddclient('203.0.113.32', h, ACCOUNT.name, t.token);
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(0);
      expect(out).to.include(`GET /dyndns/update?system=dyndns&hostname=${h}&myip=203.0.113.32 HTTP/1.1`);
      expect(r.stdout, out).to.match(/RECEIVE:\s+good 203\.0\.113\.32\r?\n/);
      expect(out).to.include(`SUCCESS:  updating ${h}: good: IP address set to 203.0.113.32`);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.32']);
    });

    it('ddclient with the token of another host of the same account: !yours, that host unchanged', async () => {
      const h = await host('tok-ddc-own');
      const sibling = await host('tok-ddc-sib');
      const t = await addToken(h);
      const r = await ddclient('203.0.113.33', sibling, ACCOUNT.name, t.token);
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(1);
      expect(r.stdout, out).to.match(/RECEIVE:\s+!yours\r?\n/);
      expect(out).to.include(`FAILED:   updating ${sibling}: !yours:`);
      expect(await env.ns.query(sibling, 'A')).to.deep.equal([]);
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);
    });

    it('inadyn custom, username = the FQDN, password = the token: good, the A record', async () => {
      const h = await host('tok-inadyn');
      const t = await addToken(h);
      const r = await inadyn({ username: h, password: t.token, hostnames: [h], address: { fixed: '203.0.113.41' } });
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(0);
      const requests = inadynRequests(r.output);
      expect(
        requests.map((q) => q.split(/\r?\n/)[0]),
        out,
      ).to.deep.equal([`GET /dyndns/update?hostname=${h}&myip=203.0.113.41 HTTP/1.0`]);
      expect(requests[0]).to.match(/^Authorization: Basic /m);
      expect(out).to.include('DDNS server response: HTTP/1.0 200 OK');
      expect(out).to.match(/\ngood 203\.0\.113\.41\n/);
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 203.0.113.41`);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.41']);
    });

    it('inadyn with a ddns-path without hostname= (only myip=%i), username = the FQDN: that host', async () => {
      const h = await host('tok-inadyn-nohost');
      const sibling = await host('tok-inadyn-sib');
      const t = await addToken(h);
      const r = await inadyn({
        username: h,
        password: t.token,
        hostnames: [h],
        address: { fixed: '203.0.113.42' },
        ddnsPath: '/dyndns/update?myip=%i',
      });
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(0);
      const requests = inadynRequests(r.output);
      expect(
        requests.map((q) => q.split(/\r?\n/)[0]),
        out,
      ).to.deep.equal(['GET /dyndns/update?myip=203.0.113.42 HTTP/1.0']);
      expect(out).to.match(/\ngood 203\.0\.113\.42\n/);
      expect(out).to.include(`Successful alias table update for ${h} => new IP# 203.0.113.42`);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.42']);
      // Only the token's host: the account's other host stays as it was.
      expect(await env.ns.query(sibling, 'A')).to.deep.equal([]);
    });

    // Last in the suite: its badauth counts against 127.0.0.1, the source of every test here.
    it('a revoked token (token remove ID): ddclient reports badauth, exit 1, the record unchanged', async () => {
      const h = await host('tok-revoked');
      const t = await addToken(h);
      const first = await ddclient('203.0.113.51', h, h, t.token);
      expect(first.code, shown(first.output, t)).to.equal(0);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.51']);

      expect(await env.cliOk(['token', 'remove', t.id])).to.include(`token ${t.id} of ${h} removed`);
      expect(await listed(h)).to.deep.equal([]);
      const serial = await env.ns.serial();
      const r = await ddclient('203.0.113.52', h, h, t.token);
      const out = shown(r.output, t);
      expect(r.code, out).to.equal(1);
      expect(r.stdout, out).to.match(/RECEIVE:\s+HTTP\/1\.0 401 Unauthorized\r?\n/);
      expect(r.stdout, out).to.match(/RECEIVE:\s+badauth\r?\n/);
      expect(out).to.include(`FAILED:   updating ${h}: authorization failed (HTTP/1.0 401 Unauthorized`);
      expect(out).not.to.include('SUCCESS');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.51']);
      expect(await env.ns.serial()).to.equal(serial);
    });
  });
}
