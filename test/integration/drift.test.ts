/**
 * `ddns-bridge reconcile` against real primaries (docs/operators.md, "Drift"): hosts updated through the bridge, then
 * records edited behind its back (Knot: knotc zone-begin/zone-set/zone-commit; BIND, PowerDNS: nsupdate), found by a
 * signed zone transfer, fixed with --fix (a second transfer agrees), an unknown name reported and left; --json, --zone,
 * a wrong key and a transfer altered on the way.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import {
  freePort,
  generateTsigKey,
  LAB_KINDS,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  requireBinary,
  serverBinaries,
  startNameServer,
  writeKeyFile,
  type NameServer,
} from '../../src/lab/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { nsupdate } from '../support/nsupdate.js';

const UA = 'drift-test/1.0';
const OTHER_ZONE = 'other.example.test';
/** Static names two labels under the apex (not host-shaped here), enough for a transfer of several messages. */
const STATIC_RECORDS = Array.from({ length: 2000 }, (_, i) => `s${i}.static.${ZONE}. 3600 IN A 198.18.7.${i % 250}`);

/** One edit of a zone behind the bridge's back; owners relative to the zone. */
type Edit = { set: string; ttl: number; type: string; data: string } | { unset: string; type: string };

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 10_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(file)} ${args.join(' ')}: ${stderr || stdout || err.message}`));
      else resolve(stdout);
    });
  });
}

for (const kind of LAB_KINDS) {
  /**
   * The cases the nameserver plays no part in (the CLI, serve and import-all refusing a static name before anything
   * reaches DNS; a usage error) run once, with the first primary; the rest run with every primary.
   */
  const firstPrimary = kind === LAB_KINDS[0];

  describe(`reconcile: drift between DNS and Redis (${kind})`, function () {
    this.timeout(120_000);
    let env: BridgeEnv;
    let keyFile: string;
    const auth: [string, string] = ['dora', 'dora-pw-123456'];
    const [a, b, c] = ['a', 'b', 'c'].map((l) => `${l}.${ZONE}`) as [string, string, string];
    const mail = `mail.${ZONE}`;

    /** Edit the zone as an operator would, past the bridge. */
    async function editBehind(edits: Edit[]): Promise<void> {
      if (kind === 'knot') {
        const knotc = requireBinary('knotc');
        const conf = ['-c', path.join(env.ns.dir, 'knot.conf')];
        await run(knotc, [...conf, 'zone-begin', ZONE]);
        for (const e of edits) {
          const args =
            'set' in e
              ? ['zone-set', ZONE, e.set, String(e.ttl), e.type, e.data]
              : ['zone-unset', ZONE, e.unset, e.type];
          await run(knotc, [...conf, ...args]);
        }
        await run(knotc, [...conf, 'zone-commit', ZONE]);
        return;
      }
      const lines = edits.map((e) =>
        'set' in e
          ? `update add ${e.set}.${ZONE} ${e.ttl} ${e.type} ${e.data}`
          : `update delete ${e.unset}.${ZONE} ${e.type}`,
      );
      const r = await nsupdate(keyFile, `server 127.0.0.1 ${env.ns.port}\nzone ${ZONE}\n${lines.join('\n')}\nsend\n`);
      if (r.code !== 0) throw new Error(`nsupdate: ${r.output}`);
    }

    async function update(query: string): Promise<void> {
      const r = await env.get(`/nic/update?${query}`, { auth, ua: UA });
      expect(r.body).to.match(/^good /);
    }

    before(async function () {
      requireBinariesOrSkip(this, ['redis-server', ...serverBinaries(kind), kind === 'knot' ? 'knotc' : 'nsupdate']);
      env = await BridgeEnv.start({ kind, records: [`${mail}. 3600 IN A 192.0.2.25`, ...STATIC_RECORDS] });
      keyFile = await writeKeyFile(path.join(env.dir, 'edit.key'), env.ns.key);
      await env.addAccount(...auth);
      await Promise.all([a, b, c].map((h) => env.addHost(h, auth[0])));
      await update(`hostname=${a}&myip=192.0.2.10`);
      await update(`hostname=${b}&myip=192.0.2.11,2001:db8::11&wildcard=ON`);
      await update(`hostname=${c}&myip=192.0.2.12&mx=${mail}&backmx=YES`);
    });

    after(async () => {
      await env?.stop();
    });

    it('in agreement after updates through the bridge: exit 0, one summary line', async () => {
      const r = await env.cli(['reconcile']);
      expect(r.stderr).to.equal('');
      expect(r.stdout).to.equal('in agreement: 1 zone, 3 hosts\n');
      expect(r.code).to.equal(0);
    });

    it('records edited behind its back are found (exit 1); --fix republishes Redis, leaves the unknown name; then exit 0', async () => {
      await editBehind([
        { unset: 'a', type: 'A' },
        { set: 'a', ttl: 60, type: 'A', data: '192.0.2.99' },
        { set: '*.a', ttl: 60, type: 'A', data: '192.0.2.98' },
        { unset: '*.b', type: 'AAAA' },
        { unset: 'c', type: 'MX' },
        { set: 'rogue', ttl: 60, type: 'A', data: '192.0.2.66' },
      ]);
      const findings = [
        `extra     *.${a} A: 192.0.2.98`,
        `different ${a} A: DNS 192.0.2.99; Redis 192.0.2.10`,
        `missing   *.${b} AAAA: 2001:db8::11`,
        `missing   ${c} MX: 10 ${c}, 20 ${mail}`,
        `unknown   rogue.${ZONE} A: 192.0.2.66 (not registered)`,
      ];
      const found = await env.cli(['reconcile']);
      expect(found.stdout).to.equal([...findings, 'drift: 5 findings (1 zone, 3 hosts)', ''].join('\n'));
      expect(found.code).to.equal(1);

      const fixed = await env.cli(['reconcile', '--fix']);
      expect(fixed.stdout).to.equal(
        [
          ...findings,
          'drift: 5 findings (1 zone, 3 hosts)',
          `republished ${a}`,
          `republished ${b}`,
          `republished ${c}`,
          `still unknown   rogue.${ZONE} A: 192.0.2.66 (not registered)`,
          'after the fix: drift: 1 finding (1 zone, 3 hosts)',
          '',
        ].join('\n'),
      );
      expect(fixed.code, 'the unknown name is never deleted: still drift').to.equal(1);
      expect(await env.ns.query(a, 'A')).to.deep.equal(['192.0.2.10']);
      expect(await env.ns.query(`x.${a}`, 'A'), 'no wildcard at a').to.deep.equal([]);
      expect(await env.ns.query(`x.${b}`, 'AAAA')).to.deep.equal(['2001:db8::11']);
      expect(await env.ns.query(c, 'MX')).to.deep.equal([`10 ${c}.`, `20 ${mail}.`]);
      expect(await env.ns.query(`rogue.${ZONE}`, 'A'), 'unknown to Redis: left').to.deep.equal(['192.0.2.66']);
      // Redis is what it was: the fix publishes the stored state, it does not record a client's update.
      const host = await env.hostJson(a);
      expect(host.ipv4).to.equal('192.0.2.10');

      await editBehind([{ unset: 'rogue', type: 'A' }]);
      const again = await env.cli(['reconcile']);
      expect(again.stdout).to.equal('in agreement: 1 zone, 3 hosts\n');
      expect(again.code).to.equal(0);
    });

    it('--json prints one document naming the findings; --fix --json reports the fix, verified (exit 0)', async () => {
      await editBehind([{ set: 'b', ttl: 3600, type: 'AAAA', data: '2001:db8::bad' }]);
      const r = await env.cli(['reconcile', '--json']);
      expect(r.code).to.equal(1);
      const doc = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(doc).to.deep.equal({
        agree: false,
        zones: [{ zone: ZONE, serial: (doc.zones as { serial: number }[])[0]!.serial, hosts: 3 }],
        findings: [
          {
            kind: 'different',
            zone: ZONE,
            name: b,
            type: 'AAAA',
            host: b,
            dns: ['2001:db8::11', '2001:db8::bad'],
            redis: ['2001:db8::11'],
          },
        ],
      });
      const f = await env.cli(['reconcile', '--fix', '--json']);
      const fixed = JSON.parse(f.stdout) as { fix: Record<string, unknown> };
      expect(fixed.fix).to.deep.equal({ republished: [b], failed: [], findings: [], agree: true });
      expect(f.code).to.equal(0);
      expect(await env.ns.query(b, 'AAAA')).to.deep.equal(['2001:db8::11']);
    });

    it('a TTL changed behind its back is a difference', async () => {
      await editBehind([
        { unset: 'a', type: 'A' },
        { set: 'a', ttl: 7200, type: 'A', data: '192.0.2.10' },
      ]);
      const r = await env.cli(['reconcile']);
      expect(r.stdout).to.equal(
        `different ${a} A: TTL 7200 in DNS, 60 from Redis\ndrift: 1 finding (1 zone, 3 hosts)\n`,
      );
      expect(r.code).to.equal(1);
      expect((await env.cli(['reconcile', '--fix'])).code).to.equal(0);
    });

    describe('static names (zones[].staticNames)', () => {
      const www = `www.${ZONE}`;
      const zone0 = () => (env.config.zones as Record<string, unknown>[])[0]!;
      const withStaticNames = (staticNames: string[], extra: Record<string, unknown> = {}) =>
        env.writeConfig({ zones: [{ ...zone0(), staticNames }], ...extra });

      before(async () => {
        // The operator's own records beside the hosts: www, and a wildcard below lab.
        await editBehind([
          { set: 'www', ttl: 3600, type: 'A', data: '192.0.2.80' },
          { set: 'www', ttl: 3600, type: 'AAAA', data: '2001:db8::80' },
          { set: '*.lab', ttl: 3600, type: 'A', data: '192.0.2.81' },
          { set: 'rogue3', ttl: 60, type: 'A', data: '192.0.2.66' },
        ]);
      });

      after(async () => {
        await env.writeConfig({});
        await editBehind([
          { unset: 'www', type: 'A' },
          { unset: 'www', type: 'AAAA' },
          { unset: '*.lab', type: 'A' },
        ]);
      });

      it('are never findings; an unregistered name that is none still is (exit 1), and alone agrees (exit 0)', async () => {
        const unlisted = await env.cli(['reconcile']);
        expect(unlisted.stdout).to.equal(
          [
            `unknown   *.lab.${ZONE} A: 192.0.2.81 (not registered)`,
            `unknown   rogue3.${ZONE} A: 192.0.2.66 (not registered)`,
            `unknown   ${www} A: 192.0.2.80 (not registered)`,
            `unknown   ${www} AAAA: 2001:db8::80 (not registered)`,
            'drift: 4 findings (1 zone, 3 hosts)',
            '',
          ].join('\n'),
        );
        expect(unlisted.code).to.equal(1);

        await withStaticNames(['WWW', `*.lab.${ZONE}.`]);
        const listed = await env.cli(['reconcile', '--fix']);
        expect(listed.stdout).to.equal(
          [
            `unknown   rogue3.${ZONE} A: 192.0.2.66 (not registered)`,
            'drift: 1 finding (1 zone, 3 hosts)',
            `still unknown   rogue3.${ZONE} A: 192.0.2.66 (not registered)`,
            'after the fix: drift: 1 finding (1 zone, 3 hosts)',
            '',
          ].join('\n'),
        );
        expect(listed.code).to.equal(1);
        expect(await env.ns.query(www, 'AAAA'), 'left as it is').to.deep.equal(['2001:db8::80']);

        await editBehind([{ unset: 'rogue3', type: 'A' }]);
        const agreed = await env.cli(['reconcile']);
        expect(agreed.stdout).to.equal('in agreement: 1 zone, 3 hosts\n');
        expect(agreed.code).to.equal(0);
      });

      if (firstPrimary) {
        it('host add and host import refuse one, its names below a pattern, and the host whose wildcard is one', async () => {
          await withStaticNames(['www', '*.lab']);
          const add = await env.cli(['host', 'add', www, '--account', auth[0]]);
          expect(add.stderr).to.equal(
            `ddns-bridge: ${www} is a static name of zone ${ZONE} (zones[].staticNames): never a host\n`,
          );
          expect(add.code).to.equal(2);
          const below = await env.cli(['host', 'add', `pc.lab.${ZONE}`, '--account', auth[0]]);
          expect(below.stderr).to.contain(`(*.lab.${ZONE} in zones[].staticNames): never a host`);
          expect(below.code).to.equal(2);
          const wildcard = await env.cli(['host', 'add', `lab.${ZONE}`, '--account', auth[0]]);
          expect(wildcard.stderr).to.contain(
            `its wildcard name *.lab.${ZONE}, which every update of the host rewrites`,
          );
          expect(wildcard.code).to.equal(2);

          const imported = await env.cli(['host', 'import', '-'], `${www} ${auth[0]}\n`);
          expect(imported.stderr).to.equal(
            `line 1: ${www} is a static name of zone ${ZONE} (zones[].staticNames): never a host\n`,
          );
          expect(imported.stdout).to.equal('imported 0, unchanged 0, rejected 1\n');
          expect(imported.code).to.equal(1);
          expect((await env.cli(['host', 'show', www])).code, 'not registered').to.equal(1);
        });

        it('a host registered before its name was listed: check FAILED (exit 1), serve refuses to start, import-all refuses', async () => {
          const token = randomBytes(24).toString('hex');
          await writeFile(path.join(env.dir, 'admin.token'), token + '\n', { mode: 0o600 });
          const adminPort = await freePort();
          await withStaticNames(['a', '*.lab'], {
            admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile: 'admin.token' },
          });

          const check = await env.cli(['check']);
          expect(check.stderr).to.contain(
            `host ${a} (account ${auth[0]}): FAILED: ${a} is a static name of zone ${ZONE} (zones[].staticNames): ` +
              "never a host; its updates overwrite the operator's records until the host (host remove) or the name " +
              'is removed\n',
          );
          expect(check.code).to.equal(1);

          // Refused at load: serve does not start while the host sits at a static name, and names it (exit 2).
          const refused = await env.cli(['serve', '--port', '0']);
          expect(refused.code).to.equal(2);
          expect(refused.stderr).to.contain(
            `config: zones[].staticNames: host ${a} (account ${auth[0]}): ${a} is a static name`,
          );
          expect(refused.stderr).to.contain('remove the host (host remove) or the name');

          // Without that name listed, serve starts; POST /v1/hosts refuses a static name as host add does: 400.
          await withStaticNames(['*.lab'], {
            admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile: 'admin.token' },
          });
          await env.startServe();
          const serve = { child: env.serves.pop()!, port: env.ports.pop()! };
          try {
            const created = await fetch(`http://127.0.0.1:${adminPort}/v1/hosts`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ fqdn: `pc.lab.${ZONE}`, account: auth[0] }),
            });
            expect(created.status).to.equal(400);
            expect(await created.json()).to.deep.equal({
              error: 'ERR_INVALID_INPUT',
              message: `pc.lab.${ZONE} is a static name of zone ${ZONE} (*.lab.${ZONE} in zones[].staticNames): never a host`,
            });
          } finally {
            serve.child.kill('SIGTERM');
            await once(serve.child, 'exit');
          }
          await withStaticNames(['a', '*.lab'], {
            admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile: 'admin.token' },
          });

          const exported = await env.cliOk(['export', '-']);
          const restore = await env.cli(['import-all', '-', '--merge'], exported);
          expect(restore.stderr).to.contain('nothing written');
          expect(restore.stderr).to.contain(`: host ${a} is a static name of zone ${ZONE} (zones[].staticNames)`);
          expect(restore.code).to.equal(2);
          await env.writeConfig({});
        });
      }
    });

    describe('--zone, with a second zone configured', () => {
      let other: NameServer;
      let dir: string;

      before(async () => {
        dir = await makeTempDir('ddns-drift-other-');
        const key = generateTsigKey('other-key');
        other = await startNameServer(kind, { dir, zone: OTHER_ZONE, key });
        await writeFile(path.join(env.dir, 'other.secret'), key.secret + '\n', { mode: 0o600 });
        const zones = env.config.zones as Record<string, unknown>[];
        await env.writeConfig({
          zones: [
            ...zones,
            {
              name: OTHER_ZONE,
              primary: `127.0.0.1:${other.port}`,
              key: { name: key.name, algorithm: key.algorithm, secretFile: 'other.secret' },
            },
          ],
        });
        await editBehind([{ set: 'rogue2', ttl: 60, type: 'A', data: '192.0.2.67' }]);
      });

      after(async () => {
        await env.writeConfig({});
        await editBehind([{ unset: 'rogue2', type: 'A' }]);
        await other?.stop();
        await removeDir(dir);
      });

      it('every configured zone by default; --zone compares only that one', async () => {
        const all = await env.cli(['reconcile']);
        expect(all.stdout).to.equal(
          `unknown   rogue2.${ZONE} A: 192.0.2.67 (not registered)\ndrift: 1 finding (2 zones, 3 hosts)\n`,
        );
        expect(all.code).to.equal(1);
        const one = await env.cli(['reconcile', '--zone', `${OTHER_ZONE}.`]);
        expect(one.stdout).to.equal('in agreement: 1 zone, 0 hosts\n');
        expect(one.code).to.equal(0);
        const main = await env.cli(['reconcile', '--zone', ZONE, '--json']);
        expect((JSON.parse(main.stdout) as { zones: { zone: string }[] }).zones.map((z) => z.zone)).to.deep.equal([
          ZONE,
        ]);
        expect(main.code).to.equal(1);
      });

      if (firstPrimary) {
        it('a zone that is not configured is a usage error (exit 2)', async () => {
          const r = await env.cli(['reconcile', '--zone', 'nowhere.example.test']);
          expect(r.code).to.equal(2);
          expect(r.stdout).to.equal('');
          expect(r.stderr).to.contain('nowhere.example.test is not a configured zone');
        });
      }
    });

    it('a wrong key: the transfer is refused, a clear error, exit 2; the secret is never printed', async () => {
      const wrong = generateTsigKey('ddns-key').secret;
      await writeFile(path.join(env.dir, 'wrong.secret'), wrong + '\n', { mode: 0o600 });
      const zone = (env.config.zones as Record<string, unknown>[])[0]!;
      await env.writeConfig({ zones: [{ ...zone, key: { ...(zone.key as object), secretFile: 'wrong.secret' } }] });
      try {
        const r = await env.cli(['reconcile']);
        expect(r.code).to.equal(2);
        expect(r.stdout).to.equal('');
        // PowerDNS refuses a transfer with a wrong secret as NOTAUTH, unsigned, without a TSIG error: the bridge
        // cannot tell it from a missing TSIG-ALLOW-AXFR.
        expect(r.stderr).to.equal(
          kind === 'pdns'
            ? `ddns-bridge: reconcile: zone ${ZONE}: the primary refused the zone transfer (NOTAUTH, unsigned): grant ` +
                'the key zone transfers (Knot: an acl with action transfer; BIND: allow-transfer { key NAME; }; ' +
                'PowerDNS: the zone metadata TSIG-ALLOW-AXFR NAME; ' +
                'docs/operators.md, "Drift")\n'
            : `ddns-bridge: reconcile: zone ${ZONE}: primary answered NOTAUTH, TSIG error BADSIG: key secret mismatch ` +
                'between the bridge and the primary (on Knot also: the acl denies this key)\n',
        );
        const j = await env.cli(['reconcile', '--json']);
        expect(j.code).to.equal(2);
        expect((JSON.parse(j.stdout) as { error: { code: string } }).error.code).to.equal(
          kind === 'pdns' ? 'ERR_DNS_RCODE' : 'ERR_DNS_TSIG',
        );
        expect(r.stderr + j.stdout + j.stderr).not.to.contain(wrong);
      } finally {
        await env.writeConfig({});
      }
    });

    it('a later message of the transfer altered on the way fails TSIG verification (exit 2), nothing is fixed', async () => {
      const relay = await alteringRelay(env.ns.port);
      const zone = (env.config.zones as Record<string, unknown>[])[0]!;
      await env.writeConfig({ zones: [{ ...zone, primary: `127.0.0.1:${relay.port}` }] });
      try {
        const r = await env.cli(['reconcile', '--fix']);
        expect(relay.altered(), 'the relay changed an address in the second message').to.equal(true);
        expect(r.stdout, 'no findings, nothing republished').to.equal('');
        expect(r.stderr).to.equal(
          `ddns-bridge: reconcile: zone ${ZONE}: a transfer message failed TSIG verification: MAC does not match: ` +
            'the transfer is not trusted\n',
        );
        expect(r.code).to.equal(2);
      } finally {
        relay.close();
        await env.writeConfig({});
      }
    });
  });
}

/**
 * A TCP relay to the primary that changes one static address (198.18.7.x → 198.18.8.x) in the second message of
 * each answer stream: what someone on the path could do to a transfer.
 */
async function alteringRelay(target: number): Promise<{ port: number; altered(): boolean; close(): void }> {
  let altered = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: target });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d) => upstream.write(d));
    let pending = Buffer.alloc(0);
    let messages = 0;
    upstream.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const frame = Buffer.from(pending.subarray(0, 2 + pending.readUInt16BE(0)));
        pending = pending.subarray(frame.length);
        if (++messages === 2) {
          const at = frame.indexOf(Buffer.from([198, 18, 7]), 14);
          if (at >= 0) {
            frame[at + 2] = 8;
            altered = true;
          }
        }
        client.write(frame);
      }
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    altered: () => altered,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}
