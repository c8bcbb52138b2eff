/**
 * No cross-account shadowing: `host add` and `host import` refuse a name below or above a host
 * of another account (its wildcard would answer for the other's name); names of one account
 * may nest. Old data is indexed on first use, and `check` lists pairs registered before.
 * Real CLI, redis-server and the primary (knotd, named): the shadowing itself is shown with dig.
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { requireBinariesOrSkip, type LabKind } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import { BridgeEnv, ZONE, expectedReply } from '../support/bridge.js';

const KEYS = new Keys('ddns:');
const OK = (body: string) => expectedReply(200, 'OK', body);
const NAMESERVERS: { kind: LabKind; binaries: string[] }[] = [
  { kind: 'knot', binaries: ['redis-server', 'knotd', 'kdig'] },
  { kind: 'bind', binaries: ['redis-server', 'named', 'dig'] },
];

for (const { kind, binaries } of NAMESERVERS) {
  /**
   * The refusals of host add and host import (the store's nest index; nothing reaches the primary) run once, with
   * the first primary; the cases whose outcome is what the primary answers run with each.
   */
  const firstPrimary = kind === NAMESERVERS[0]!.kind;

  describe(`no shadowing across accounts (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;
    let raw: Redis;
    let n = 0;
    /** A fresh subtree of the zone for each test: `top.<zone>` and names below it. */
    let top: string;

    before(async function () {
      requireBinariesOrSkip(this, binaries);
      env = await BridgeEnv.start({ kind, config: { frequency: { minInterval: 0.001 } } });
      raw = new Redis(env.redis.url);
      await Promise.all(['anna', 'bert'].map((account) => env.addAccount(account, `${account}-pw`)));
    });

    after(async () => {
      raw?.disconnect();
      await env?.stop();
    });

    beforeEach(() => {
      top = `t${++n}-${process.pid}.${ZONE}`;
    });

    const add = (fqdn: string, account: string) => env.cli(['host', 'add', fqdn, '--account', account]);

    if (firstPrimary) {
      it("a name below another account's host is refused, naming it; nothing is written", async () => {
        await env.addHost(top, 'anna');
        const before = await raw.keys('ddns:*');
        const r = await add(`b.${top}`, 'bert');
        expect(r.code).to.equal(1);
        expect(r.stderr).to.include(`host b.${top} would lie below ${top} of account anna`);
        expect((await raw.keys('ddns:*')).sort()).to.deep.equal(before.sort());
        // Deeper still, with a free name between: refused too.
        expect((await add(`c.x.${top}`, 'bert')).stderr).to.include(`would lie below ${top} of account anna`);
      });

      it("a name above another account's host is refused, naming it", async () => {
        await env.addHost(`b.x.${top}`, 'bert');
        const r = await add(top, 'anna');
        expect(r.code).to.equal(1);
        expect(r.stderr).to.include(`host ${top} would lie above b.x.${top} of account bert`);
        expect(await raw.exists(KEYS.host(top))).to.equal(0);
        expect((await add(`x.${top}`, 'anna')).stderr).to.include(`would lie above b.x.${top} of account bert`);
      });
    }

    it('names of one account nest in either order, and update as usual', async () => {
      await env.addHost(`b.${top}`, 'anna');
      await env.addHost(top, 'anna');
      await env.addHost(`c.d.${top}`, 'anna');
      const r = await env.get(`/nic/update?hostname=${top},b.${top}&myip=192.0.2.5&wildcard=ON`, {
        auth: ['anna', 'anna-pw'],
        ua: 'Nest/1.0',
      });
      expect(r.raw.toString()).to.equal(OK('good 192.0.2.5\ngood 192.0.2.5\n'));
      expect(await env.ns.query(`b.${top}`, 'A')).to.deep.equal(['192.0.2.5']);
    });

    if (firstPrimary) {
      it('host remove clears the index: the other account may then register above', async () => {
        await env.addHost(`b.${top}`, 'bert');
        expect((await add(top, 'anna')).code).to.equal(1);
        await env.cliOk(['host', 'remove', `b.${top}`]);
        expect(await raw.hlen(KEYS.nestIndex(top))).to.equal(0);
        expect((await add(top, 'anna')).code).to.equal(0);
      });

      it('host import refuses the same (also within one file), imports the rest, names each conflict', async () => {
        await env.addHost(top, 'anna');
        const file = path.join(env.dir, `import-${n}.txt`);
        await writeFile(
          file,
          [
            `b.${top} bert`,
            `c.${top} anna`,
            `q.${top.replace(/^t/, 'u')} bert`,
            `r.q.${top.replace(/^t/, 'u')} anna`,
            '',
          ].join('\n'),
        );
        const r = await env.cli(['host', 'import', file]);
        expect(r.code).to.equal(1);
        expect(r.stdout).to.include('imported 2, unchanged 0, rejected 2');
        expect(r.stderr).to.include(`line 1: host b.${top} would lie below ${top} of account anna`);
        expect(r.stderr).to.include(
          `line 4: host r.q.${top.replace(/^t/, 'u')} would lie below q.${top.replace(/^t/, 'u')} of account bert`,
        );
        expect(await raw.hget(KEYS.host(`c.${top}`), 'o')).to.equal('anna');
        expect(await raw.exists(KEYS.host(`b.${top}`))).to.equal(0);
      });
    }

    it('old data: check lists the pair (and the wildcard does shadow); the first host add indexes it', async () => {
      // Hosts written as a bridge before this check did: no nest index, no migration mark.
      await raw.hdel(KEYS.schema(), 'nesting');
      for (const [fqdn, owner] of [
        [top, 'anna'],
        [`b.${top}`, 'bert'],
        [`y.z.${top}`, 'bert'],
      ] as const) {
        await raw.hset(KEYS.host(fqdn), 'o', owner, 't', 'dynamic', 's', 'active');
        await raw.hincrby(KEYS.account(owner), 'n', 1);
      }
      const checked = await env.cli(['check']);
      expect(checked.stderr).to.include(`warning: host b.${top} (account bert) lies below ${top} (account anna)`);
      expect(checked.stderr).to.include(`warning: host y.z.${top} (account bert) lies below ${top} (account anna)`);

      // What the warning is about: anna's wildcard answers for bert's name while it has no records.
      const r = await env.get(`/nic/update?hostname=${top}&myip=192.0.2.9&wildcard=ON`, {
        auth: ['anna', 'anna-pw'],
        ua: 'Nest/1.0',
      });
      expect(r.raw.toString()).to.equal(OK('good 192.0.2.9\n'));
      expect(await env.ns.query(`b.${top}`, 'A')).to.deep.equal(['192.0.2.9']);

      // The first host add indexes the old hosts: z.<top> now lies above bert's y.z.<top>.
      expect((await add(`z.${top}`, 'anna')).stderr).to.include(`would lie above y.z.${top} of account bert`);
      expect(await raw.hget(KEYS.schema(), 'nesting')).to.equal('1');
      expect(await raw.hget(KEYS.nestIndex(`z.${top}`), `y.z.${top}`)).to.equal('bert');
      for (const fqdn of [`b.${top}`, `y.z.${top}`]) await env.cliOk(['host', 'remove', fqdn, '--keep-dns']);
      const clean = await env.cli(['check']);
      expect(clean.stderr).to.not.include(`lies below ${top}`);
    });
  });
}
