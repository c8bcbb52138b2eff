/**
 * IPv6 prefixes end to end (docs/protocol.md, "IPv6 prefixes"): real `ddns-bridge serve`, redis-server and knotd or
 * named. A parent's update with `ipv6prefix` / `ip6lanprefix` moves the AAAA of the hosts linked to it, in one UPDATE
 * message (counted by a proxy in front of the primary); the records as the primary answers them; host link and
 * unlink through the CLI and the provisioning API.
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import {
  freePort,
  LAB_KINDS,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  serverBinaries,
} from '../../src/lab/index.js';
import { HOST_FIELDS, Keys } from '../../src/store/keys.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';

const KINDS = LAB_KINDS;
const TOKEN = 'p'.repeat(24) + '0123456789abcdef0123456789abcdef';
const KEYS = new Keys('ddns:');
const IID = '::1234:5678:9abc:def0';

let seq = 0;
const uniq = (label: string) => `${label}-${process.pid}-${++seq}.${ZONE}`;

for (const kind of KINDS) {
  describe(`IPv6 prefixes: linked hosts follow their parent's prefix (${kind})`, function () {
    this.timeout(90_000);
    let env: BridgeEnv;
    let raw: Redis;
    let adminPort: number;
    let tokenDir: string | undefined;
    const alice: [string, string] = ['pfx-alice', 'pfx-alice-secret'];
    const dora: [string, string] = ['pfx-dora', 'pfx-dora-secret'];
    const bob: [string, string] = ['pfx-bob', 'pfx-bob-secret'];

    before(async function () {
      requireBinariesOrSkip(this, ['redis-server', ...serverBinaries(kind)]);
      adminPort = await freePort();
      tokenDir = await makeTempDir('prefix-admin-');
      const tokenFile = path.join(tokenDir, 'admin.token');
      await writeFile(tokenFile, TOKEN + '\n', { mode: 0o600 });
      env = await BridgeEnv.start({
        kind,
        countDns: true,
        // The default frequency rule (60 s, 3 frequent requests in a row): each test has a parent of its own.
        config: { dns: { timeout: 3 }, admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile } },
      });
      raw = new Redis(env.redis.url);
      await env.addAccount(alice[0], alice[1]);
      await env.addAccount(dora[0], dora[1], true);
      await env.addAccount(bob[0], bob[1]);
    });

    after(async () => {
      raw?.disconnect();
      await env?.stop();
      if (tokenDir) await removeDir(tokenDir);
    });

    async function call(method: string, p: string, body?: unknown): Promise<{ status: number; json: unknown }> {
      const r = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      return { status: r.status, json: text === '' ? undefined : JSON.parse(text) };
    }

    const update = (query: string, creds: [string, string] = alice) =>
      env.get(`/dyndns/update?${query}`, { auth: creds });

    async function host(label: string, owner = alice[0], type = 'dynamic'): Promise<string> {
      const fqdn = uniq(label);
      await env.addHost(fqdn, owner, type);
      return fqdn;
    }

    async function link(child: string, parent: string, iid: string): Promise<void> {
      await env.cliOk(['host', 'link', child, '--to', parent, '--iid', iid]);
    }

    /**
     * A parent and linked children (iids given), all of `owner`. The children are independent of each other: each
     * added and linked beside the others (one CLI process at a time per child), in the order given.
     */
    async function family(owner: string, iids: string[]): Promise<{ parent: string; children: string[] }> {
      const parent = await host('router', owner);
      const children = await Promise.all(
        iids.map(async (iid) => {
          const child = await host('lan', owner);
          await link(child, parent, iid);
          return child;
        }),
      );
      return { parent, children };
    }

    /** The reply body of an update and how many UPDATE messages it sent to the primary. */
    async function counted(query: string, creds: [string, string] = alice): Promise<{ body: string; updates: number }> {
      const before = env.dnsMessages('update');
      const r = await update(query, creds);
      expect(r.status, r.body).to.equal(200);
      return { body: r.body, updates: env.dnsMessages('update') - before };
    }

    it('three linked hosts: a prefix and a new prefix move all three AAAA with the parent in one UPDATE', async () => {
      const { parent, children } = await family(alice[0], [IID, '::1', '::a:b:c:d']);
      const first = await counted(
        `hostname=${parent}&myip=203.0.113.10,2001:db8:ffff::10&ipv6prefix=2001:db8:1200:3400::/56`,
      );
      expect(first).to.deep.equal({ body: 'good 203.0.113.10,2001:db8:ffff::10\n', updates: 1 });
      expect(await env.ns.query(parent, 'A')).to.deep.equal(['203.0.113.10']);
      expect(await env.ns.query(parent, 'AAAA')).to.deep.equal(['2001:db8:ffff::10']);
      expect(await env.ns.query(children[0]!, 'AAAA')).to.deep.equal(['2001:db8:1200:3400:1234:5678:9abc:def0']);
      expect(await env.ns.query(children[1]!, 'AAAA')).to.deep.equal(['2001:db8:1200:3400::1']);
      expect(await env.ns.query(children[2]!, 'AAAA')).to.deep.equal(['2001:db8:1200:3400:a:b:c:d']);
      for (const c of children) expect(await env.ns.query(c, 'A')).to.deep.equal([]);

      const second = await counted(
        `hostname=${parent}&myip=203.0.113.11,2001:db8:ffff::11&ipv6prefix=2001:db8:1200:5600::/56`,
      );
      expect(second).to.deep.equal({ body: 'good 203.0.113.11,2001:db8:ffff::11\n', updates: 1 });
      expect(await env.ns.query(parent, 'A')).to.deep.equal(['203.0.113.11']);
      expect(await env.ns.query(parent, 'AAAA')).to.deep.equal(['2001:db8:ffff::11']);
      expect(await env.ns.query(children[0]!, 'AAAA')).to.deep.equal(['2001:db8:1200:5600:1234:5678:9abc:def0']);
      expect(await env.ns.query(children[1]!, 'AAAA')).to.deep.equal(['2001:db8:1200:5600::1']);
      expect(await env.ns.query(children[2]!, 'AAAA')).to.deep.equal(['2001:db8:1200:5600:a:b:c:d']);

      // host show: the parent's last prefix, each child's link and the address it was given.
      const [shownParent, shownChild, plainChild, plainParent] = await Promise.all([
        env.hostJson(parent),
        env.hostJson(children[0]!),
        env.cliOk(['host', 'show', children[0]!]),
        env.cliOk(['host', 'show', parent]),
      ]);
      expect(shownParent).to.include({ prefix: '2001:db8:1200:5600::/56', link: null, ipv6: '2001:db8:ffff::11' });
      expect(shownChild.link).to.deep.equal({ parent, iid: IID });
      expect(shownChild).to.include({ prefix: null, ipv6: '2001:db8:1200:5600:1234:5678:9abc:def0', ipv4: null });
      expect(plainChild).to.include(`\nlink: follows ${parent} (iid ${IID})\n`);
      expect(plainParent).to.include('\nprefix: 2001:db8:1200:5600::/56\n');
    });

    it('a /48 and a /64: the interface identifier lands in the first /64 of the prefix', async () => {
      const { parent, children } = await family(alice[0], [IID]);
      const wide = await counted(`hostname=${parent}&myip=203.0.113.20&ipv6prefix=2001:db8:4800::/48`);
      expect(wide).to.deep.equal({ body: 'good 203.0.113.20\n', updates: 1 });
      expect(await env.ns.query(children[0]!, 'AAAA')).to.deep.equal(['2001:db8:4800:0:1234:5678:9abc:def0']);
      // A parent that sent no IPv6 address keeps no AAAA of its own.
      expect(await env.ns.query(parent, 'AAAA')).to.deep.equal([]);
      const narrow = await counted(`hostname=${parent}&myip=203.0.113.20&ipv6prefix=2001:db8:6400:3456::/64`);
      expect(narrow).to.deep.equal({ body: 'good 203.0.113.20\n', updates: 1 });
      expect(await env.ns.query(children[0]!, 'AAAA')).to.deep.equal(['2001:db8:6400:3456:1234:5678:9abc:def0']);
      expect((await env.hostJson(parent)).prefix).to.equal('2001:db8:6400:3456::/64');
    });

    it('a FRITZ!Box request: myip=<ipv4>,<ipv6>&ip6lanprefix=<prefix>', async () => {
      const { parent, children } = await family(alice[0], [IID, '::2']);
      const q = `hostname=${parent}&myip=198.51.100.7,2001:db8:aaaa:1::7` + `&ip6lanprefix=2001:db8:f0:f100::/64`;
      expect(await counted(q)).to.deep.equal({ body: 'good 198.51.100.7,2001:db8:aaaa:1::7\n', updates: 1 });
      expect(await env.ns.query(parent, 'A')).to.deep.equal(['198.51.100.7']);
      expect(await env.ns.query(parent, 'AAAA')).to.deep.equal(['2001:db8:aaaa:1::7']);
      expect(await env.ns.query(children[0]!, 'AAAA')).to.deep.equal(['2001:db8:f0:f100:1234:5678:9abc:def0']);
      expect(await env.ns.query(children[1]!, 'AAAA')).to.deep.equal(['2001:db8:f0:f100::2']);
      // The same request percent-encoded, as a router may send it: nothing changed.
      const encoded =
        `hostname=${parent}&myip=198.51.100.7%2C2001%3Adb8%3Aaaaa%3A1%3A%3A7` +
        `&ip6lanprefix=2001%3Adb8%3Af0%3Af100%3A%3A%2F64`;
      expect(await counted(encoded)).to.deep.equal({ body: 'nochg 198.51.100.7,2001:db8:aaaa:1::7\n', updates: 0 });
    });

    it('the same prefix again is nochg with no DNS traffic; a host linked since makes it good once', async () => {
      const { parent } = await family(alice[0], [IID]);
      const q = `hostname=${parent}&myip=203.0.113.30&ipv6prefix=2001:db8:3000:3000::/56`;
      expect(await counted(q)).to.deep.equal({ body: 'good 203.0.113.30\n', updates: 1 });
      expect(await counted(q)).to.deep.equal({ body: 'nochg 203.0.113.30\n', updates: 0 });
      const late = await host('late');
      await link(late, parent, '::77');
      expect(await counted(q)).to.deep.equal({ body: 'good 203.0.113.30\n', updates: 1 });
      expect(await env.ns.query(late, 'AAAA')).to.deep.equal(['2001:db8:3000:3000::77']);
    });

    it('linked hosts in offline, blocked or closed are left alone; the active one follows', async () => {
      const { parent, children } = await family(dora[0], ['::a', '::b', '::c', '::d']);
      const [active, offline, blocked, closed] = children as [string, string, string, string];
      const q1 = `hostname=${parent}&myip=203.0.113.40&ipv6prefix=2001:db8:4000:100::/56`;
      expect((await counted(q1, dora)).body).to.equal('good 203.0.113.40\n');
      for (const [c, id] of [
        [active, 'a'],
        [offline, 'b'],
        [blocked, 'c'],
        [closed, 'd'],
      ] as const)
        expect(await env.ns.query(c, 'AAAA')).to.deep.equal([`2001:db8:4000:100::${id}`]);

      expect((await update(`hostname=${offline}&myip=192.0.2.41&offline=YES`, dora)).body).to.equal(
        'good 192.0.2.41\n',
      );
      await Promise.all([env.cliOk(['host', 'block', blocked]), env.cliOk(['host', 'close', closed])]);
      const q2 = `hostname=${parent}&myip=203.0.113.40&ipv6prefix=2001:db8:4000:200::/56`;
      expect(await counted(q2, dora)).to.deep.equal({ body: 'good 203.0.113.40\n', updates: 1 });
      expect(await env.ns.query(active, 'AAAA')).to.deep.equal(['2001:db8:4000:200::a']);
      expect(await env.ns.query(offline, 'AAAA')).to.deep.equal([]);
      expect(await env.ns.query(blocked, 'AAAA')).to.deep.equal(['2001:db8:4000:100::c']);
      expect(await env.ns.query(closed, 'AAAA')).to.deep.equal(['2001:db8:4000:100::d']);
      const [shownOffline, shownBlocked, shownClosed] = await Promise.all(
        [offline, blocked, closed].map(env.hostJson, env),
      );
      expect(shownOffline).to.include({ state: 'offline', ipv6: null });
      expect(shownBlocked).to.include({ state: 'blocked', ipv6: '2001:db8:4000:100::c' });
      expect(shownClosed).to.include({ state: 'closed', ipv6: '2001:db8:4000:100::d' });
      // Those left alone do not hold the prefix back: it is recorded, the same request is nochg.
      expect(await counted(q2, dora)).to.deep.equal({ body: 'nochg 203.0.113.40\n', updates: 0 });
    });

    it('the frequency rule counts the parent only: its 5th request within a minute is abuse, the children are never counted', async () => {
      const { parent, children } = await family(alice[0], [IID, '::5']);
      // The 1st is not frequent, the 2nd to 4th are the three frequent ones allowed (frequency.maxFrequent).
      for (let i = 1; i <= 4; i++) {
        const r = await update(`hostname=${parent}&myip=203.0.113.50&ipv6prefix=2001:db8:5000:${i}00::/56`);
        expect(r.body, `request ${i}`).to.equal('good 203.0.113.50\n');
        expect(await env.ns.query(children[1]!, 'AAAA')).to.deep.equal([`2001:db8:5000:${i}00::5`]);
      }
      const fifth = await counted(`hostname=${parent}&myip=203.0.113.50&ipv6prefix=2001:db8:5000:500::/56`);
      expect(fifth).to.deep.equal({ body: 'abuse\n', updates: 0 });
      expect(await env.ns.query(children[1]!, 'AAAA')).to.deep.equal(['2001:db8:5000:400::5']);
      expect((await env.hostJson(parent)).state).to.equal('blocked');
      for (const c of children) {
        const counts = await raw.hmget(KEYS.host(c), HOST_FIELDS.lastRequest, HOST_FIELDS.frequentCount);
        expect(counts, c).to.deep.equal([null, null]);
        expect((await env.hostJson(c)).state).to.equal('active');
      }
      // A child's own request is its first: served, not frequent.
      expect((await update(`hostname=${children[0]}&myip=192.0.2.55`)).body).to.equal('good 192.0.2.55\n');
      expect(await raw.hget(KEYS.host(children[0]!), HOST_FIELDS.frequentCount)).to.equal('0');
    });

    it('host link and unlink: validation and exit codes (CLI), and what unlink leaves', async () => {
      const [parent, child, other, fixed] = await Promise.all([
        host('router'),
        host('lan'),
        host('bobs', bob[0]),
        host('static', alice[0], 'static'),
      ]);
      const cases: [string[], number, string][] = [
        [['host', 'link', child, '--to', child, '--iid', IID], 2, `host ${child} cannot follow itself`],
        [['host', 'link', child, '--to', parent, '--iid', '::1:0:0:0:0'], 2, 'at most 64 bits'],
        [['host', 'link', child, '--to', parent, '--iid', '::'], 2, 'must not be zero'],
        [['host', 'link', child, '--to', parent, '--iid', 'nope'], 2, 'not an interface identifier'],
        [['host', 'link', child, '--to', 'not a name', '--iid', IID], 2, 'invalid host name'],
        [['host', 'link', child, '--to', `missing.${ZONE}`, '--iid', IID], 1, `no host missing.${ZONE}`],
        [['host', 'link', `missing.${ZONE}`, '--to', parent, '--iid', IID], 1, `no host missing.${ZONE}`],
        [['host', 'link', child, '--to', other, '--iid', IID], 1, 'only hosts of one account link'],
        [['host', 'link', fixed, '--to', parent, '--iid', IID], 1, `host ${fixed} is static: only dynamic hosts link`],
        [['host', 'link', child, '--to', parent], 2, 'Missing required argument: iid'],
        [['host', 'unlink', child], 1, `host ${child} is not linked`],
      ];
      // The refusals are the CLI's and the store's (nothing reaches the primary, nothing is written): checked once,
      // with the first primary, side by side; what a link does in DNS below is checked with every primary.
      if (kind === KINDS[0]) {
        const runs = await Promise.all(cases.map(([args]) => env.cli(args)));
        for (const [i, [args, code, message]] of cases.entries()) {
          expect(runs[i]!.code, args.join(' ')).to.equal(code);
          expect(runs[i]!.stderr, args.join(' ')).to.include(message);
        }
      }
      expect(await env.cliOk(['host', 'link', child, '--to', parent, '--iid', '1234:5678:9abc:def0'])).to.equal(
        `host ${child} follows the prefix of ${parent} (iid ${IID})\n`,
      );
      // No chains: a parent follows nobody, a linked host has no followers.
      const third = await host('third');
      const chainUp = await env.cli(['host', 'link', third, '--to', child, '--iid', '::3']);
      expect(chainUp.code).to.equal(1);
      expect(chainUp.stderr).to.include(`host ${child} follows ${parent} itself: links do not chain`);
      const chainDown = await env.cli(['host', 'link', parent, '--to', third, '--iid', '::3']);
      expect(chainDown.code).to.equal(1);
      expect(chainDown.stderr).to.include(`host ${parent} has 1 host linked to it: links do not chain`);

      await update(`hostname=${parent}&myip=203.0.113.60&ipv6prefix=2001:db8:6000:100::/56`);
      expect(await env.ns.query(child, 'AAAA')).to.deep.equal(['2001:db8:6000:100:1234:5678:9abc:def0']);
      expect(await env.cliOk(['host', 'unlink', child])).to.equal(`host ${child} no longer follows ${parent}\n`);
      expect((await env.hostJson(child)).link).to.equal(null);
      expect(await raw.smembers(KEYS.hostLinks(parent))).to.deep.equal([]);
      await update(`hostname=${parent}&myip=203.0.113.60&ipv6prefix=2001:db8:6000:200::/56`);
      // Unlinked: it keeps the address it had.
      expect(await env.ns.query(child, 'AAAA')).to.deep.equal(['2001:db8:6000:100:1234:5678:9abc:def0']);

      // Removing a parent removes its hosts' links.
      await link(child, parent, IID);
      await env.cliOk(['host', 'remove', parent]);
      expect((await env.hostJson(child)).link).to.equal(null);
      expect(await raw.exists(KEYS.hostLinks(parent))).to.equal(0);
    });

    it('the provisioning API: POST and DELETE /v1/hosts/{fqdn}/link, 200/204/400/404/409, the Host schema', async () => {
      const [parent, child, other] = await Promise.all([host('router'), host('lan'), host('bobs', bob[0])]);
      const bad = await call('POST', `/v1/hosts/${child}/link`, { to: parent, iid: '::1:0:0:0:0' });
      expect(bad.status).to.equal(400);
      expect(bad.json).to.deep.include({ error: 'ERR_INVALID_INPUT', field: 'iid' });
      expect((await call('POST', `/v1/hosts/${child}/link`, { to: parent })).status).to.equal(400);
      expect((await call('POST', `/v1/hosts/${child}/link`, { to: child, iid: IID })).status).to.equal(400);
      expect((await call('POST', `/v1/hosts/${child}/link`, { to: `missing.${ZONE}`, iid: IID })).status).to.equal(404);
      const foreign = await call('POST', `/v1/hosts/${child}/link`, { to: other, iid: IID });
      expect(foreign.status).to.equal(409);
      expect((foreign.json as { error: string }).error).to.equal('ERR_CONFLICT');
      expect((await call('DELETE', `/v1/hosts/${child}/link`)).status).to.equal(404);

      const made = await call('POST', `/v1/hosts/${child}/link`, { to: parent, iid: '::00AB' });
      expect(made).to.deep.equal({ status: 200, json: { fqdn: child, parent, iid: '::ab' } });
      await update(`hostname=${parent}&myip=203.0.113.70&ipv6prefix=2001:db8:7000:7000::/56`);
      const shown = await call('GET', `/v1/hosts/${child}`);
      expect(shown.json).to.deep.include({
        link: { parent, iid: '::ab' },
        prefix: null,
        ipv6: '2001:db8:7000:7000::ab',
      });
      expect((await call('GET', `/v1/hosts/${parent}`)).json).to.deep.include({
        link: null,
        prefix: '2001:db8:7000:7000::/56',
      });
      const listed = (await call('GET', `/v1/hosts?account=${alice[0]}`)).json as { fqdn: string; link: unknown }[];
      expect(listed.find((h) => h.fqdn === child)?.link).to.deep.equal({ parent, iid: '::ab' });
      expect(await call('DELETE', `/v1/hosts/${child}/link`)).to.deep.equal({ status: 204, json: undefined });
      expect((await call('GET', `/v1/hosts/${child}`)).json).to.deep.include({ link: null });
    });
  });
}
