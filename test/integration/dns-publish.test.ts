/**
 * DnsPublisher and probeZone against real primaries (knotd, named and pdns_server from the lab): every plan of
 * docs/protocol.md, "What goes into DNS" is published and read back with dig, and every failure mode the
 * protocol names is provoked for real.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { HostChange } from '../../src/app/ports.js';
import type { Config, ZoneConfig } from '../../src/config/schema.js';
import { DnsUpdateError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/log.js';
import { emptyDnsState, type TargetState } from '../../src/core/types.js';
import { DnsPublisher, probeZone } from '../../src/dns/index.js';
import { askPrimary } from '../../src/dns/authoritative.js';
import {
  DAEMONS,
  findBinary,
  generateTsigKey,
  LAB_KINDS,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  requireBinary,
  serverBinaries,
  startNameServer,
  type NameServer,
} from '../../src/lab/index.js';

const ZONE = 'dyn.example.org';

const dnsConfig = (over: Partial<Config['dns']> = {}): Config['dns'] => ({
  ttl: 60,
  timeoutMs: 3000,
  maxInFlight: 16,
  fudge: 300,
  clockOffsetSeconds: 0,
  ...over,
});

interface LogLine {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

function captureLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push({ level, msg, fields });
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const quietLogger: Logger = captureLogger([]);

function target(t: Partial<TargetState>): TargetState {
  return { ipv4: null, ipv6: null, wildcard: false, mx: null, backmx: false, offline: false, ...t };
}

function change(label: string, t: Partial<TargetState>): HostChange {
  return { fqdn: `${label}.${ZONE}`, zone: ZONE, previous: emptyDnsState(), target: target(t) };
}

async function rejection(p: Promise<unknown>): Promise<DnsUpdateError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(DnsUpdateError);
    return err as DnsUpdateError;
  }
  throw new Error('expected a DnsUpdateError, the update succeeded');
}

/**
 * The A records of `labels` as one dig process reads them (`dig +tcp +norec +noall +answer NAME A NAME A …`, kdig
 * where there is no dig, as the lab's query does): the addresses of each label, sorted.
 */
function digA(server: NameServer, labels: string[]): Promise<Map<string, string[]>> {
  const dig = findBinary('dig') ?? requireBinary('kdig');
  const queries = labels.flatMap((l) => [`${l}.${ZONE}`, 'A']);
  const args = [`@${server.host}`, '-p', String(server.port), '+tcp', '+norec', '+noall', '+answer', ...queries];
  return new Promise((resolve, reject) => {
    execFile(dig, args, { timeout: 10_000 }, (err, stdout) => {
      if (err) return reject(new Error(`${path.basename(dig)} failed: ${err.message}`));
      const out = new Map<string, string[]>(labels.map((l) => [l, []]));
      for (const line of stdout.split('\n')) {
        const [name, , , type, data] = line.trim().split(/\s+/);
        if (type !== 'A' || !name?.endsWith(`.${ZONE}.`)) continue;
        out.get(name.slice(0, -ZONE.length - 2))?.push(data!);
      }
      for (const addresses of out.values()) addresses.sort();
      resolve(out);
    });
  });
}

for (const kind of LAB_KINDS) {
  describe(`dns publish against ${DAEMONS[kind]}`, function () {
    this.timeout(60_000);
    let dir: string | undefined;
    let server: NameServer;
    let zone: ZoneConfig;
    let publisher: DnsPublisher;
    const log: LogLine[] = [];
    const extraPublishers: DnsPublisher[] = [];

    const ungrantedKey = generateTsigKey('xfer-key', 'hmac-sha256');

    before(async function () {
      requireBinariesOrSkip(this, serverBinaries(kind));
      dir = await makeTempDir(`dns-publish-${kind}-`);
      const key = generateTsigKey('ddns-key', 'hmac-sha256');
      server = await startNameServer(kind, {
        dir,
        zone: ZONE,
        key,
        ungrantedKey,
        records: [
          'alias 60 IN CNAME target.example.net.',
          'mail 60 IN A 192.0.2.25',
          'sub 60 IN NS ns.elsewhere.example.',
        ],
      });
      zone = {
        name: ZONE,
        primary: { host: server.host, port: server.port },
        key: { name: key.name, algorithm: key.algorithm, secret: Buffer.from(key.secret, 'base64') },
        staticNames: [],
      };
      publisher = new DnsPublisher([zone], dnsConfig(), captureLogger(log));
    });

    after(async () => {
      await publisher?.close();
      for (const p of extraPublishers) await p.close();
      await server?.stop();
      if (dir) await removeDir(dir);
    });

    /** A publisher with a variation of the zone or dns config (closed in after()). */
    function variant(
      zoneOver: Partial<ZoneConfig>,
      dnsOver: Partial<Config['dns']> = {},
      lines: LogLine[] = [],
    ): DnsPublisher {
      const p = new DnsPublisher([{ ...zone, ...zoneOver }], dnsConfig(dnsOver), captureLogger(lines));
      extraPublishers.push(p);
      return p;
    }

    const q = (label: string, type: string) => server.query(`${label}.${ZONE}`, type);

    it('IPv4: A published, nothing else; the serial moves', async () => {
      const before = await server.serial();
      await publisher.publish(change('v4', { ipv4: '192.0.2.1' }));
      expect(await q('v4', 'A')).to.deep.equal(['192.0.2.1']);
      expect(await q('v4', 'AAAA')).to.deep.equal([]);
      expect(await server.serial()).to.be.greaterThan(before);
    });

    it('IPv6: AAAA published', async () => {
      await publisher.publish(change('v6', { ipv6: '2001:db8::6' }));
      expect(await q('v6', 'AAAA')).to.deep.equal(['2001:db8::6']);
      expect(await q('v6', 'A')).to.deep.equal([]);
    });

    it('dual stack, and a later change replaces (not adds to) the addresses', async () => {
      await publisher.publish(change('dual', { ipv4: '192.0.2.2', ipv6: '2001:db8::2' }));
      expect(await q('dual', 'A')).to.deep.equal(['192.0.2.2']);
      expect(await q('dual', 'AAAA')).to.deep.equal(['2001:db8::2']);
      await publisher.publish(change('dual', { ipv4: '192.0.2.3', ipv6: '2001:db8::3' }));
      expect(await q('dual', 'A')).to.deep.equal(['192.0.2.3']);
      expect(await q('dual', 'AAAA')).to.deep.equal(['2001:db8::3']);
    });

    it('wildcard on: a random name under the host resolves; off: it no longer does', async () => {
      const random = `r${randomBytes(4).toString('hex')}.wild`;
      await publisher.publish(change('wild', { ipv4: '192.0.2.4', ipv6: '2001:db8::4', wildcard: true }));
      expect(await q(random, 'A')).to.deep.equal(['192.0.2.4']);
      expect(await q(random, 'AAAA')).to.deep.equal(['2001:db8::4']);
      await publisher.publish(change('wild', { ipv4: '192.0.2.4', ipv6: '2001:db8::4', wildcard: false }));
      expect(await q(random, 'A')).to.deep.equal([]);
      expect(await q(random, 'AAAA')).to.deep.equal([]);
      expect(await q('wild', 'A')).to.deep.equal(['192.0.2.4']);
    });

    it('MX without backmx: MX 10 <mx>', async () => {
      await publisher.publish(change('mx1', { ipv4: '192.0.2.5', mx: `mail.${ZONE}` }));
      expect(await q('mx1', 'MX')).to.deep.equal([`10 mail.${ZONE}.`]);
    });

    it('MX with backmx: MX 10 <host>, MX 20 <mx>', async () => {
      await publisher.publish(change('mx2', { ipv4: '192.0.2.6', mx: `mail.${ZONE}`, backmx: true }));
      expect(await q('mx2', 'MX')).to.deep.equal([`10 mx2.${ZONE}.`, `20 mail.${ZONE}.`]);
    });

    it('mx null deletes the MX RRset', async () => {
      await publisher.publish(change('mx3', { ipv4: '192.0.2.7', mx: `mail.${ZONE}` }));
      expect(await q('mx3', 'MX')).to.have.length(1);
      await publisher.publish(change('mx3', { ipv4: '192.0.2.7', mx: null }));
      expect(await q('mx3', 'MX')).to.deep.equal([]);
      expect(await q('mx3', 'A')).to.deep.equal(['192.0.2.7']);
    });

    it('offline removes the addresses (host and wildcard), keeps MX; the next change restores', async () => {
      const random = `r${randomBytes(4).toString('hex')}.off`;
      await publisher.publish(
        change('off', { ipv4: '192.0.2.8', ipv6: '2001:db8::8', wildcard: true, mx: `mail.${ZONE}` }),
      );
      expect(await q(random, 'A')).to.deep.equal(['192.0.2.8']);
      await publisher.publish(change('off', { offline: true, wildcard: true, mx: `mail.${ZONE}` }));
      expect(await q('off', 'A')).to.deep.equal([]);
      expect(await q('off', 'AAAA')).to.deep.equal([]);
      expect(await q(random, 'A')).to.deep.equal([]);
      expect(await q(random, 'AAAA')).to.deep.equal([]);
      expect(await q('off', 'MX')).to.deep.equal([`10 mail.${ZONE}.`]);
      await publisher.publish(change('off', { ipv4: '192.0.2.9', wildcard: true, mx: `mail.${ZONE}` }));
      expect(await q('off', 'A')).to.deep.equal(['192.0.2.9']);
      expect(await q(random, 'A')).to.deep.equal(['192.0.2.9']);
    });

    it('a name holding a CNAME: YXRRSET, the CNAME untouched, no address added, one error log line', async () => {
      const before = log.length;
      const err = await rejection(publisher.publish(change('alias', { ipv4: '192.0.2.10' })));
      expect(err).to.include({ code: 'ERR_DNS_RCODE', rcode: 'YXRRSET', retryable: false, zone: ZONE });
      expect(await q('alias', 'CNAME')).to.deep.equal(['target.example.net.']);
      expect(await server.query(`alias.${ZONE}`, 'A')).to.deep.equal(['target.example.net.']); // the CNAME itself, no A
      const lines = log.slice(before);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include({ level: 'error' });
      expect(lines[0]!.fields).to.include({ zone: ZONE, rcode: 'YXRRSET', host: `alias.${ZONE}` });
      expect(lines[0]!.msg).to.match(/CNAME/);
    });

    it('a wrong secret → non-retryable TSIG failure (BADSIG; PowerDNS: an unsigned REFUSED), the secret never logged', async () => {
      const lines: LogLine[] = [];
      const wrong = randomBytes(32);
      const p = variant({ key: { ...zone.key, secret: wrong } }, {}, lines);
      const err = await rejection(p.publish(change('v4', { ipv4: '192.0.2.66' })));
      expect(err.retryable).to.equal(false);
      if (kind === 'pdns') {
        // PowerDNS sends no TSIG error: a plain REFUSED, unsigned (so it could stand in for a NOERROR).
        expect(err).to.include({ code: 'ERR_DNS_RCODE', rcode: 'REFUSED', signedAnswer: false });
        expect(err.message).to.match(/REFUSED \(unsigned response\)/);
      } else {
        expect(['BADSIG', 'NOTAUTH']).to.include(err.rcode);
        expect(err.code).to.equal('ERR_DNS_TSIG');
        expect(err.message).to.match(/secret/);
      }
      expect(await q('v4', 'A')).to.deep.equal(['192.0.2.1']);
      expect(lines.filter((l) => l.level === 'error')).to.have.length(1);
      const text = JSON.stringify(lines) + err.message + String(err.stack);
      for (const secret of [wrong, zone.key.secret]) {
        expect(text).to.not.include(secret.toString('base64'));
        expect(text).to.not.include(secret.toString('hex'));
      }
    });

    it('a wrong key name → non-retryable failure (BADKEY; PowerDNS: an unsigned REFUSED)', async () => {
      const p = variant({ key: { ...zone.key, name: 'not-the-key' } });
      const err = await rejection(p.publish(change('v4', { ipv4: '192.0.2.67' })));
      expect(err).to.include(
        kind === 'pdns'
          ? { code: 'ERR_DNS_RCODE', rcode: 'REFUSED', retryable: false, signedAnswer: false }
          : { code: 'ERR_DNS_TSIG', rcode: 'BADKEY', retryable: false },
      );
      expect(await q('v4', 'A')).to.deep.equal(['192.0.2.1']);
    });

    it('one name a per-name update rule denies, merged with allowed ones: only that host fails (Knot: BADKEY, BIND: REFUSED; PowerDNS: NOERROR and the record skipped)', async () => {
      await mkdir(path.join(dir!, 'restricted'));
      const restricted = await startNameServer(kind, {
        dir: path.join(dir!, 'restricted'),
        zone: ZONE,
        key: { name: zone.key.name, algorithm: zone.key.algorithm, secret: zone.key.secret.toString('base64') },
        updatableNames: ['first', 'ok1', 'ok2', 'ok3'],
      });
      try {
        const restrictedZone = { ...zone, primary: { host: restricted.host, port: restricted.port } };
        // check cannot prove rights granted only to some names, and says so. PowerDNS's policy script
        // skips the probe's record and answers NOERROR: the probe passes (docs/operators.md, "PowerDNS").
        const probed = await probeZone(restrictedZone, dnsConfig());
        if (kind === 'pdns') expect(probed).to.deep.equal({ ok: true });
        else
          expect(!probed.ok && probed.reason).to.match(
            /accepts the key but refused .* grants only some names or types updates just those/,
          );
        const p = new DnsPublisher([{ ...restrictedZone, maxInFlight: 1 }], dnsConfig(), quietLogger);
        extraPublishers.push(p);
        // 'first' goes alone; the others queue behind it and go out as one message.
        const labels = ['first', 'ok1', 'denied', 'ok2', 'ok3'];
        const results = await Promise.allSettled(
          labels.map((l, i) => p.publish(change(l, { ipv4: `192.0.2.${120 + i}` }))),
        );
        expect(p.senderFor(ZONE)!.stats.largestMessageHosts, 'the four were merged').to.equal(4);
        expect(results.map((r) => r.status)).to.deep.equal([
          'fulfilled',
          'fulfilled',
          kind === 'pdns' ? 'fulfilled' : 'rejected',
          'fulfilled',
          'fulfilled',
        ]);
        if (kind !== 'pdns') {
          const denied = (results[2] as PromiseRejectedResult).reason as DnsUpdateError;
          expect(denied.rcode).to.equal(kind === 'knot' ? 'BADKEY' : 'REFUSED');
        }
        for (const [i, l] of labels.entries()) {
          expect(await restricted.query(`${l}.${ZONE}`, 'A'), l).to.deep.equal(
            l === 'denied' ? [] : [`192.0.2.${120 + i}`],
          );
        }
      } finally {
        await restricted.stop();
      }
    });

    it('a name of 253 characters (no room for "*."): its address is published; its wildcard fails that host alone', async () => {
      const labels = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63)];
      const label = `${'d'.repeat(253 - ZONE.length - 3 * 64 - 1)}.${labels.join('.')}`;
      expect(`${label}.${ZONE}`).to.have.length(253);
      await publisher.publish(change(label, { ipv4: '192.0.2.130' }));
      expect(await q(label, 'A')).to.deep.equal(['192.0.2.130']);
      const [wild, other] = await Promise.allSettled([
        publisher.publish(change(label, { ipv4: '192.0.2.131', wildcard: true })),
        publisher.publish(change('beside-long', { ipv4: '192.0.2.132' })),
      ]);
      expect(wild.status === 'rejected' && (wild.reason as DnsUpdateError).code).to.equal('ERR_DNS_PROTOCOL');
      expect(other.status).to.equal('fulfilled');
      expect(await q(label, 'A'), 'unchanged').to.deep.equal(['192.0.2.130']);
      expect(await q('beside-long', 'A')).to.deep.equal(['192.0.2.132']);
    });

    it('a clock one hour ahead → BADTIME with a clock-skew hint (PowerDNS: an unsigned REFUSED, no skew)', async () => {
      const p = variant({}, { clockOffsetSeconds: 3600 });
      const err = await rejection(p.publish(change('v4', { ipv4: '192.0.2.68' })));
      if (kind === 'pdns') {
        // No signed BADTIME: the skew cannot be told from a wrong key (docs/operators.md, "PowerDNS").
        expect(err).to.include({ code: 'ERR_DNS_RCODE', rcode: 'REFUSED', retryable: false, maybeApplied: true });
        expect(err.message).to.not.match(/our clock is/);
      } else {
        expect(err).to.include({ code: 'ERR_DNS_TSIG', rcode: 'BADTIME', retryable: false, maybeApplied: false });
        // The primary's signed BADTIME verifies, so the skew it names is reported (±2 s).
        const skew = /our clock is (-?\d+) s off/.exec(err.message);
        expect(skew, err.message).to.not.equal(null);
        expect(Number(skew![1])).to.be.within(3598, 3602);
      }
      expect(await q('v4', 'A')).to.deep.equal(['192.0.2.1']);
    });

    it('200 concurrent publishes all land (group commit keeps the message count down)', async () => {
      const labels = Array.from({ length: 200 }, (_, i) => `bulk${i}`);
      await Promise.all(labels.map((l, i) => publisher.publish(change(l, { ipv4: `198.51.${i >> 8}.${i & 255}` }))));
      const stats = publisher.senderFor(ZONE)!.stats;
      expect(stats.largestMessageHosts).to.be.greaterThan(1);
      // Read back with dig, 20 names to a dig process (one process per name would be 200).
      for (let i = 0; i < labels.length; i += 20) {
        const answers = await digA(server, labels.slice(i, i + 20));
        labels.slice(i, i + 20).forEach((l, j) => expect(answers.get(l), l).to.deep.equal([`198.51.0.${i + j}`]));
      }
    });

    it('askPrimary reads what the primary holds: address, alias, none, a referral below a delegation, a refusal outside its zones', async () => {
      const ask = (name: string) => askPrimary({ host: server.host, port: server.port }, name, 1000);
      expect(await ask(`mail.${ZONE}`)).to.equal('address');
      expect(await ask(`ALIAS.${ZONE}`)).to.equal('alias');
      expect(await ask(`nothere.${ZONE}`)).to.equal('none');
      expect(await ask(ZONE), 'the apex: SOA and NS, no address').to.equal('none');
      expect(await ask(`mail.sub.${ZONE}`)).to.equal('referral');
      expect(await ask('www.example.net')).to.equal('unreachable');
    });

    it('probeZone: ok with the right key and changes nothing; fails with a wrong secret or key name', async () => {
      const serial = await server.serial();
      expect(await probeZone(zone, dnsConfig())).to.deep.equal({ ok: true });
      expect(await server.serial()).to.equal(serial);
      const badSecret = await probeZone({ ...zone, key: { ...zone.key, secret: randomBytes(32) } }, dnsConfig());
      expect(badSecret.ok).to.equal(false);
      expect(!badSecret.ok && badSecret.reason).to.match(kind === 'pdns' ? /REFUSED/ : /BADSIG|NOTAUTH/);
      const badName = await probeZone({ ...zone, key: { ...zone.key, name: 'not-the-key' } }, dnsConfig());
      expect(badName.ok).to.equal(false);
      expect(!badName.ok && badName.reason).to.match(kind === 'pdns' ? /REFUSED/ : /BADKEY/);
      const badZone = await probeZone({ ...zone, name: 'other.example.org' }, dnsConfig());
      expect(badZone.ok).to.equal(false);
    });

    it('probeZone: a key the primary knows but no update rule grants fails (BIND checks its update-policy per record)', async () => {
      const serial = await server.serial();
      const ungranted = {
        name: ungrantedKey.name,
        algorithm: ungrantedKey.algorithm,
        secret: Buffer.from(ungrantedKey.secret, 'base64'),
      };
      const r = await probeZone({ ...zone, key: ungranted }, dnsConfig());
      expect(r.ok).to.equal(false);
      // Knot's ACL (PowerDNS's TSIG-ALLOW-DNSUPDATE) turns the key away at once; BIND accepts it and
      // refuses only the record.
      expect(!r.ok && r.reason).to.match(
        kind !== 'bind'
          ? /BADKEY|NOTAUTH|REFUSED/
          : /accepts the key but refused a change of the A records at ddns-bridge-check\.\S+ \(REFUSED\): grant the key/,
      );
      expect(await server.serial()).to.equal(serial);
    });

    it('probeZone: the probe name holding an A record fails with a reason that names it, and the record stays', async () => {
      await publisher.publish(change('ddns-bridge-check', { ipv4: '192.0.2.98' }));
      try {
        const r = await probeZone(zone, dnsConfig());
        expect(r).to.deep.equal({
          ok: false,
          reason: `ddns-bridge-check.${ZONE} has an A record, so the probe could not prove the key's rights: free that name`,
        });
        expect(await q('ddns-bridge-check', 'A')).to.deep.equal(['192.0.2.98']);
      } finally {
        await publisher.publish(change('ddns-bridge-check', {}));
      }
      expect(await probeZone(zone, dnsConfig())).to.deep.equal({ ok: true });
    });

    it('a stopped primary → retryable DnsUpdateError within timeoutMs; after restart it works again', async () => {
      await server.stop();
      try {
        const started = Date.now();
        const err = await rejection(publisher.publish(change('v4', { ipv4: '192.0.2.99' })));
        expect(err.retryable).to.equal(true);
        expect(['ERR_DNS_CONNECTION', 'ERR_DNS_TIMEOUT']).to.include(err.code);
        expect(Date.now() - started).to.be.lessThan(3000 + 200);
      } finally {
        await server.start();
      }
      await publisher.publish(change('v4', { ipv4: '192.0.2.11' }));
      expect(await q('v4', 'A')).to.deep.equal(['192.0.2.11']);
    });
  });
}
