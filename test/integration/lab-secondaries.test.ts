/**
 * The lab's secondaries (issue 30): a Knot primary notifying a Knot and a BIND secondary that
 * transfer the zone with their own TSIG key (AXFR, then IXFR); a frozen or stopped secondary
 * catching up; signing primaries (Knot dnssec-signing, BIND inline-signing) whose secondaries serve
 * the signatures. Real knotd and named on loopback.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import {
  freePort,
  generateTsigKey,
  makeTempDir,
  removeDir,
  requireBinary,
  requireBinariesOrSkip,
  secondaryBinaries,
  serverBinaries,
  startNameServer,
  startPrimaryWithSecondaries,
  startSecondary,
  writeKeyFile,
  type BindSecondary,
  type KnotSecondary,
  type LabSecondary,
  type NameServer,
  type TsigKey,
} from '../../src/lab/index.js';
import { nsupdate } from '../support/nsupdate.js';
import { waitFor } from '../support/wait.js';

const ZONE = 'dyn.example.test';

/** An UPDATE signed with the primary's update key (the bridge's); rejects when it fails. */
async function update(primary: NameServer, keyFile: string, lines: string): Promise<void> {
  const r = await nsupdate(keyFile, `server ${primary.host} ${primary.port}\nzone ${ZONE}\n${lines}\nsend\n`);
  expect(r.code, r.output).to.equal(0);
}

/** `dig AXFR` of the zone at `server`, signed with the key in `keyFile` if given: the records, or dig's complaint. */
function axfr(server: NameServer, keyFile?: string): Promise<string> {
  const args = [`@${server.host}`, '-p', String(server.port), ...(keyFile ? ['-k', keyFile] : []), '+noall', '+answer'];
  return new Promise((resolve) => {
    execFile(requireBinary('dig'), [...args, ZONE, 'AXFR'], { timeout: 10_000 }, (_err, stdout) => resolve(stdout));
  });
}

/** The log lines of `server` that match `re`. */
const logged = (server: { transferLog(): string[] }, re: RegExp): string[] =>
  server.transferLog().filter((l) => re.test(l));

describe('lab: a Knot primary with a Knot and a BIND secondary (NOTIFY, IXFR, TSIG)', function () {
  let dirs: string[] = [];
  let key: TsigKey;
  let transferKey: TsigKey;
  let keyFile: string;
  let primary: NameServer | undefined;
  let knot: KnotSecondary;
  let bind: BindSecondary;
  let all: LabSecondary[] = [];

  before(async function () {
    requireBinariesOrSkip(this, [
      ...serverBinaries('knot'),
      ...secondaryBinaries('knot'),
      ...secondaryBinaries('bind'),
      'nsupdate',
    ]);
    dirs = await Promise.all(['primary', 'knot', 'bind'].map((n) => makeTempDir(`lab-secondaries-${n}-`)));
    key = generateTsigKey('ddns-key');
    transferKey = generateTsigKey('transfer-key');
    keyFile = await writeKeyFile(path.join(dirs[0]!, 'client.key'), key);
    const started = await startPrimaryWithSecondaries('knot', { dir: dirs[0]!, zone: ZONE, key, transferKey }, [
      { kind: 'knot', dir: dirs[1]! },
      { kind: 'bind', dir: dirs[2]! },
    ]);
    primary = started.primary;
    all = started.secondaries;
    const [k, b] = all;
    if (k?.kind !== 'knot' || b?.kind !== 'bind') throw new Error('secondaries out of order');
    knot = k;
    bind = b;
  });
  after(async () => {
    await Promise.all(all.map((s) => s.stop()));
    await primary?.stop();
    await Promise.all(dirs.map((d) => removeDir(d)));
  });

  it('both transfer the zone (AXFR) with the transfer key and serve the primary serial', async () => {
    const serial = await primary!.serial();
    expect(serial).to.equal(1);
    for (const s of all) {
      expect(await s.serial(), s.kind).to.equal(serial);
      expect(await s.query(`ns.${ZONE}`, 'A'), s.kind).to.deep.equal(['127.0.0.1']);
    }
    expect(knot.transferKey.name).to.equal('transfer-key');
    expect(logged(knot, /AXFR, incoming, .* finished/)).to.have.length(1);
    expect(logged(bind, /transferred serial 1: TSIG 'transfer-key'/)).to.have.length(1);
    expect(logged(primary!, /AXFR, outgoing, .* started, serial 1/)).to.have.length(2);
  });

  it('the primary refuses a transfer without a key, and gives one to the transfer key', async () => {
    expect(await axfr(primary!)).to.match(/Transfer failed/);
    const transferKeyFile = await writeKeyFile(path.join(dirs[0]!, 'transfer.key'), transferKey);
    expect(await axfr(primary!, transferKeyFile)).to.match(/\sIN\s+NS\s+ns\.dyn\.example\.test\./);
  });

  it('an UPDATE at the primary reaches both secondaries: NOTIFY signed with the transfer key, then IXFR', async () => {
    const before = await primary!.serial();
    await update(primary!, keyFile, `update add home.${ZONE} 60 A 192.0.2.10`);
    const after = await primary!.serial();
    expect(after).to.equal(before + 1);
    await Promise.all(all.map((s) => s.waitForSerial(after)));
    for (const s of all) expect(await s.query(`home.${ZONE}`, 'A'), s.kind).to.deep.equal(['192.0.2.10']);

    // NOTIFY: Knot logs the serial it announces, BIND the key that signed it.
    // Under load its refresh timer may fetch the change first: the NOTIFY's line comes all the same.
    await waitFor(() => logged(knot, new RegExp(`notify, incoming, .*serial ${after}$`)).length === 1, {
      what: 'the Knot secondary to log the NOTIFY',
    });
    await waitFor(() => logged(bind, /received notify for zone '.*': TSIG 'transfer-key'/).length > 0, {
      what: 'the BIND secondary to log the NOTIFY',
    });
    // IXFR, not AXFR: one incremental transfer per secondary, from the primary's journal.
    expect(logged(knot, /IXFR, incoming, .* finished/)).to.have.length(1);
    expect(logged(primary!, new RegExp(`IXFR, outgoing, .* started, serial ${before} -> ${after}$`))).to.have.length(2);
  });

  it('a frozen Knot secondary stays behind (its refresh held) and catches up when thawed', async () => {
    await knot.freeze();
    let serial: number;
    try {
      expect(await knot.zoneStatus()).to.match(/freeze: yes/);
      const behind = await knot.serial();
      await update(primary!, keyFile, `update add frozen.${ZONE} 60 A 192.0.2.11`);
      serial = await primary!.serial();
      await bind.waitForSerial(serial);
      // It heard the NOTIFY, and knotd holds the refresh it asked for.
      await waitFor(() => logged(knot, new RegExp(`notify, incoming, .*serial ${serial}$`)).length > 0, {
        what: 'the frozen secondary to log the NOTIFY',
      });
      await waitFor(async () => /refresh: frozen/.test(await knot.zoneStatus()), {
        what: 'knotd to hold the refresh of the frozen zone',
      });
      expect(await knot.serial()).to.equal(behind);
      expect(await knot.query(`frozen.${ZONE}`, 'A')).to.deep.equal([]);
    } finally {
      await knot.thaw(); // also when an assert failed: the next test needs it thawed
    }
    await knot.waitForSerial(serial);
    expect(await knot.query(`frozen.${ZONE}`, 'A')).to.deep.equal(['192.0.2.11']);
    expect(await knot.zoneStatus()).to.not.match(/freeze: yes/);
  });

  it('a stopped secondary, started again, catches up with the updates it missed', async () => {
    for (const s of all) {
      await s.stop();
      const missed = await primary!.serial();
      await update(primary!, keyFile, `update add missed-${s.kind}.${ZONE} 60 A 192.0.2.12`);
      const serial = await primary!.serial();
      await s.start();
      // start() resolves as soon as it serves its own copy again (the old serial or, if the
      // refresh already ran, the new one).
      expect(await s.serial(), s.kind).to.be.oneOf([missed, serial]);
      await s.waitForSerial(serial);
      expect(await s.query(`missed-${s.kind}.${ZONE}`, 'A'), s.kind).to.deep.equal(['192.0.2.12']);
    }
    expect(await bind.query(`missed-knot.${ZONE}`, 'A')).to.deep.equal(['192.0.2.12']);
  });
});

describe('lab: secondaries are for Knot and BIND primaries', () => {
  it('a PowerDNS primary refuses notify, transferKey and dnssecSigning rather than ignore them', async () => {
    const key = generateTsigKey('ddns-key');
    for (const extra of [
      { notify: [{ host: '127.0.0.1', port: 5300 }] },
      { transferKey: key },
      { dnssecSigning: true },
    ]) {
      const err = await startNameServer('pdns', { dir: '/nonexistent', zone: ZONE, key, ...extra }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message, JSON.stringify(Object.keys(extra))).to.match(/not the PowerDNS primary/);
    }
  });
});

/** The DNSKEY and the RRSIG over the SOA and over `name`'s A records, as `server` serves them. */
async function signatures(server: { query: NameServer['query'] }, name: string) {
  const soa = await server.query(ZONE, 'SOA', { dnssec: true });
  const a = await server.query(name, 'A', { dnssec: true });
  return {
    dnskey: await server.query(ZONE, 'DNSKEY'),
    soaRrsig: soa.filter((l) => l.startsWith('SOA ')),
    aRrsig: a.filter((l) => l.startsWith('A ')),
  };
}

describe('lab: signing primaries (DNSSEC) and their secondaries', function () {
  const dirs: string[] = [];
  const servers: { stop(): Promise<void> }[] = [];
  let key: TsigKey;
  let transferKey: TsigKey;

  before(async function () {
    requireBinariesOrSkip(this, [
      ...serverBinaries('knot'),
      ...serverBinaries('bind'),
      ...secondaryBinaries('knot'),
      ...secondaryBinaries('bind'),
      'nsupdate',
    ]);
    key = generateTsigKey('ddns-key');
    transferKey = generateTsigKey('transfer-key');
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all(dirs.map((d) => removeDir(d)));
  });

  /** A signing primary of `kind` notifying a secondary of the other kind, both started here. */
  async function signedPair(kind: 'knot' | 'bind') {
    const [pDir, sDir] = await Promise.all([makeTempDir(`lab-dnssec-${kind}-`), makeTempDir(`lab-dnssec-sec-`)]);
    dirs.push(pDir, sDir);
    // The secondary's port first, so the primary can notify it.
    const port = await freePort();
    const primary = await startNameServer(kind, {
      dir: pDir,
      zone: ZONE,
      key,
      transferKey,
      notify: [{ host: '127.0.0.1', port }],
      dnssecSigning: true,
    });
    servers.push(primary);
    const secondary = await startSecondary(kind === 'knot' ? 'bind' : 'knot', {
      dir: sDir,
      zone: ZONE,
      primary,
      transferKey,
      port,
    });
    servers.push(secondary);
    await secondary.waitForSerial(primary);
    return { primary, secondary, keyFile: await writeKeyFile(path.join(pDir, 'client.key'), key) };
  }

  for (const kind of ['knot', 'bind'] as const) {
    it(`a ${kind === 'knot' ? 'Knot (dnssec-signing)' : 'BIND (inline-signing)'} primary serves RRSIGs; its secondary gets them, and the signed updates`, async () => {
      const { primary, secondary, keyFile } = await signedPair(kind);
      const signed = await signatures(primary, `ns.${ZONE}`);
      expect(signed.dnskey, 'DNSKEY').to.have.length.greaterThan(0);
      expect(signed.soaRrsig, 'RRSIG SOA').to.have.length.greaterThan(0);
      expect(signed.aRrsig, 'RRSIG A').to.have.length.greaterThan(0);
      // Signing changed the zone: the served serial is past the zone file's 1.
      const servedAtStart = await primary.serial();
      expect(servedAtStart).to.be.greaterThan(1);
      expect(await signatures(secondary, `ns.${ZONE}`)).to.deep.equal(await signatures(primary, `ns.${ZONE}`));

      await update(primary, keyFile, `update add home.${ZONE} 60 A 192.0.2.20`);
      const afterUpdate = await primary.serial();
      expect(afterUpdate).to.be.greaterThan(servedAtStart);
      await secondary.waitForSerial(primary);
      const home = await signatures(secondary, `home.${ZONE}`);
      expect(home.aRrsig, 'RRSIG over the new A record').to.have.length.greaterThan(0);
      expect(home).to.deep.equal(await signatures(primary, `home.${ZONE}`));
      if (kind === 'knot') {
        // Knot signs the update into the same serial (serial-policy increment): one step per change.
        expect(afterUpdate).to.equal(servedAtStart + 1);
        expect(logged(primary, /IXFR, outgoing, .* started/)).to.have.length.greaterThan(0);
      } else {
        // BIND keeps the unsigned zone (serial 1 in the file, 2 after the update) apart from the
        // signed one it serves, whose serial signing moved on: "serial N (unsigned 2)".
        const line = logged(primary, /\(signed\): serial \d+ \(unsigned 2\)/);
        expect(line, primary.transferLog().join('\n')).to.have.length(1);
        expect(Number(/serial (\d+)/.exec(line[0]!)![1])).to.equal(afterUpdate);
        expect(afterUpdate).to.be.greaterThan(2);
        expect(logged(primary, /IXFR started: TSIG transfer-key/)).to.have.length.greaterThan(0);
      }

      // The signed update outlives a restart of the primary (the journal), with its serial.
      await primary.stop();
      await primary.start();
      expect(await primary.serial()).to.equal(afterUpdate);
      expect(await signatures(primary, `home.${ZONE}`)).to.deep.equal(home);
    });
  }
});
