/**
 * Following the secondaries (issue 30; docs/operators.md, "Secondaries"): a Knot primary with a Knot and a BIND
 * secondary (NOTIFY + IXFR, TSIG-signed transfers, src/lab/secondary.ts), one serve process with the admin listener.
 * Propagation times and serials in /metrics, `check` and `reconcile --json`; the Knot secondary frozen shows as
 * behind and catches up when thawed; the BIND secondary stopped shows as down, and up again when started; /readyz
 * stays 200 and says so. ACME TXT answers wait until both secondaries serve the value (and give up at
 * acme.propagationTimeout with a log line), which they do not without the wait.
 */
import { expect } from 'chai';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, requireBinariesOrSkip, type KnotSecondary, type LabSecondary } from '../../src/lab/index.js';
import { DnsSerialProbe } from '../../src/dns/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { family } from '../support/metrics-fixture.js';
import { waitFor } from '../support/wait.js';

const TOKEN = 'b'.repeat(24) + 'fedcba9876543210fedcba9876543210';
const ACCOUNT = ['sec', 'secondaries-pw-1'] as [string, string];

describe('secondaries: followed after each update, waited for by ACME (knotd, named)', function () {
  this.timeout(120000);
  let env: BridgeEnv;
  let adminPort: number;
  let knot: KnotSecondary;
  let bind: LabSecondary;
  const host = `sec-${process.pid}.${ZONE}`;
  let address = 10;

  const name = (s: LabSecondary) => `127.0.0.1:${s.port}`;
  const admin = async (p: string, token = true) => {
    const r = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
      headers: token ? { Authorization: `Bearer ${TOKEN}` } : {},
    });
    return { status: r.status, text: await r.text() };
  };
  const metric = async (metricName: string, s: LabSecondary) => {
    const line = family((await admin('/metrics')).text, metricName).find((l) => l.includes(`secondary="${name(s)}"`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  const update = async () => {
    address++;
    const ip = `192.0.2.${address}`;
    const r = await env.get(`/nic/update?hostname=${host}&myip=${ip}`, { auth: ACCOUNT });
    expect(r.body).to.equal(`good ${ip}\n`);
    return ip;
  };

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'knotc', 'named', 'dig']);
    adminPort = await freePort();
    const tokenDir = await mkdtemp(path.join(os.tmpdir(), 'ddns-sec-token-'));
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writeFile(tokenFile, TOKEN + '\n', { mode: 0o600 });
    env = await BridgeEnv.start({
      secondaries: { kinds: ['knot', 'bind'] },
      config: {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
        acme: { propagationTimeout: 3 },
      },
    });
    knot = env.secondaries[0] as KnotSecondary;
    bind = env.secondaries[1]!;
    await env.addAccount(...ACCOUNT);
    await env.addHost(host, ACCOUNT[0]);
  });
  after(async () => {
    await env?.stop();
  });

  it('each update is followed to both secondaries: propagation seconds, serial behind 0, up 1; check says current', async () => {
    const ip = await update();
    for (const s of [knot, bind]) {
      await waitFor(async () => ((await metric('ddns_bridge_propagation_seconds_count', s)) ?? 0) >= 1, {
        what: `the propagation to ${s.kind} observed`,
      });
      expect(await s.query(host, 'A')).to.deep.equal([ip]);
      expect(await metric('ddns_bridge_secondary_serial_behind', s)).to.equal(0);
      expect(await metric('ddns_bridge_secondary_up', s)).to.equal(1);
    }
    const serial = await env.ns.serial();
    const checked = await env.cli(['check']);
    for (const s of [knot, bind])
      expect(checked.stdout).to.include(`zone ${ZONE} secondary ${name(s)}: serial ${serial}, current`);
    const report = JSON.parse((await env.cli(['reconcile', '--json'])).stdout) as {
      secondaries: { secondary: string; up: boolean; serial: number; primarySerial: number; behind: number }[];
    };
    expect(report.secondaries.map((s) => [s.secondary, s.up, s.serial, s.primarySerial, s.behind])).to.deep.equal([
      [name(knot), true, serial, serial, 0],
      [name(bind), true, serial, serial, 0],
    ]);
  });

  it('"auto": the zone’s NS names resolved through the primary, on port 53, beside those listed', async () => {
    const zone = {
      name: ZONE,
      primary: { host: '127.0.0.1', port: env.ns.port },
      key: { name: 'unused', algorithm: 'hmac-sha256' as const, secret: Buffer.alloc(32) },
      staticNames: [],
      secondaries: { servers: [{ host: '127.0.0.1', port: knot.port }], auto: true },
    };
    const found = await new DnsSerialProbe([zone], 2000).secondaries(ZONE);
    // The lab zone's one NS, ns.<zone>, has the address 127.0.0.1 (config/zone.example).
    expect(found.map((s) => s.name)).to.deep.equal([name(knot), '127.0.0.1:53']);
  });

  it('a frozen secondary shows as behind (metrics, check, /readyz still 200) and catches up when thawed', async () => {
    const before = (await metric('ddns_bridge_propagation_seconds_count', knot)) ?? 0;
    await knot.freeze();
    try {
      const ip = await update();
      await waitFor(async () => ((await metric('ddns_bridge_secondary_serial_behind', knot)) ?? 0) > 0, {
        what: 'the frozen secondary reported behind',
      });
      await bind.waitForSerial(env.ns);
      expect(await bind.query(host, 'A')).to.deep.equal([ip]);
      expect(await knot.query(host, 'A')).to.not.deep.equal([ip]);
      const checked = await env.cli(['check']);
      expect(checked.code, 'a lagging secondary is a warning, not a failure').to.equal(0);
      expect(checked.stderr).to.match(
        new RegExp(`warning: zone ${ZONE} secondary ${name(knot)}: serial \\d+, \\d+ behind`),
      );
      const ready = await admin('/readyz');
      expect(ready.status).to.equal(200);
      // The readiness round runs every 10 s: wait for one that saw the frozen secondary.
      await waitFor(async () => (await admin('/readyz')).text.includes(`secondary ${name(knot)} is`), {
        what: '/readyz to name the secondary behind',
        timeoutMs: 15000,
      });
      expect(JSON.parse((await admin('/readyz', false)).text)).to.deep.equal({ ready: true, failed: [] });
    } finally {
      await knot.thaw();
    }
    await waitFor(async () => (await metric('ddns_bridge_secondary_serial_behind', knot)) === 0, {
      what: 'the thawed secondary caught up',
      timeoutMs: 20000,
    });
    expect((await metric('ddns_bridge_propagation_seconds_count', knot)) ?? 0).to.be.above(before);
  });

  it('a stopped secondary shows as down, and up again once started', async () => {
    await bind.stop();
    try {
      await update();
      await waitFor(async () => (await metric('ddns_bridge_secondary_up', bind)) === 0, {
        what: 'the stopped secondary reported down',
      });
      const checked = await env.cli(['check']);
      expect(checked.stderr).to.include(`warning: zone ${ZONE} secondary ${name(bind)}: does not answer for the zone`);
    } finally {
      await bind.start();
    }
    await update();
    await waitFor(
      async () =>
        (await metric('ddns_bridge_secondary_up', bind)) === 1 &&
        (await metric('ddns_bridge_secondary_serial_behind', bind)) === 0,
      { what: 'the restarted secondary up and current', timeoutMs: 20000 },
    );
  });

  it('txt= answers once both secondaries serve the value; a frozen one makes it wait acme.propagationTimeout', async () => {
    const acmeName = `_acme-challenge.${host}`;
    const value = 'waited-value-0123456789abcdefghijklmnopqrstu';
    const r = await env.get(`/nic/update?hostname=${host}&txt=${value}`, { auth: ACCOUNT });
    expect(r.body).to.equal(`good ${value}\n`);
    // At the answer, not a moment later: both secondaries already serve it.
    const [onKnot, onBind] = await Promise.all([knot.query(acmeName, 'TXT'), bind.query(acmeName, 'TXT')]);
    expect(onKnot).to.include(`"${value}"`);
    expect(onBind).to.include(`"${value}"`);

    await knot.freeze();
    try {
      const late = 'late-value-0123456789abcdefghijklmnopqrstuvwx';
      const started = Date.now();
      const answer = await env.get(`/nic/update?hostname=${host}&txt=${late}`, { auth: ACCOUNT });
      const took = Date.now() - started;
      expect(answer.body).to.equal(`good ${late}\n`);
      expect(took, 'waited for the bound (acme.propagationTimeout 3 s)').to.be.at.least(2900);
      expect(await knot.query(acmeName, 'TXT')).to.not.include(`"${late}"`);
      await waitFor(() => env.logs.join('').includes('did not serve the ACME TXT value in time'), {
        what: 'the timeout logged',
      });
      const waits = family((await admin('/metrics')).text, 'ddns_bridge_secondary_wait_seconds_count');
      expect(waits.some((l) => l.includes('outcome="timeout"') && !l.endsWith(' 0'))).to.equal(true);
      expect(waits.some((l) => l.includes('outcome="served"') && !l.endsWith(' 0'))).to.equal(true);
    } finally {
      await knot.thaw();
    }
  });
});

for (const kind of ['knot', 'bind'] as const) {
  const signing = kind === 'knot' ? 'Knot dnssec-signing' : 'BIND dnssec-policy with inline-signing';
  describe(`secondaries of a signing primary (${signing}): signed records there before the answer`, function () {
    this.timeout(120000);
    let env: BridgeEnv;
    let secondary: LabSecondary;
    const host = `signed-${process.pid}.${ZONE}`;

    before(async function () {
      requireBinariesOrSkip(this, ['redis-server', 'knotd', 'knotc', 'named', 'dig']);
      env = await BridgeEnv.start({
        kind,
        secondaries: { kinds: [kind === 'knot' ? 'bind' : 'knot'], dnssecSigning: true },
        config: {
          frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
          acme: { propagationTimeout: 30 },
          update: { waitForSecondaries: true },
        },
      });
      secondary = env.secondaries[0]!;
      await env.addAccount(...ACCOUNT);
      await env.addHost(host, ACCOUNT[0]);
    });
    after(async () => {
      await env?.stop();
    });

    it('txt= and (update.waitForSecondaries) an address: the secondary serves them signed when good comes', async () => {
      const value = `signed-value-${kind}-0123456789abcdefghijklmnopq`;
      const r = await env.get(`/nic/update?hostname=${host}&txt=${value}`, { auth: ACCOUNT });
      expect(r.body).to.equal(`good ${value}\n`);
      const txt = await secondary.query(`_acme-challenge.${host}`, 'TXT', { dnssec: true });
      expect(txt).to.include(`"${value}"`);
      expect(
        txt.some((l) => l.startsWith('TXT ')),
        `an RRSIG over the TXT: ${txt.join(' | ')}`,
      ).to.equal(true);

      const a = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.77`, { auth: ACCOUNT });
      expect(a.body).to.equal('good 192.0.2.77\n');
      const served = await secondary.query(host, 'A', { dnssec: true });
      expect(served).to.include('192.0.2.77');
      expect(
        served.some((l) => l.startsWith('A ')),
        `an RRSIG over the A: ${served.join(' | ')}`,
      ).to.equal(true);
      // The serial compared is the one the primary serves (inline-signing's differs from the unsigned one).
      const checked = await env.cli(['check']);
      expect(checked.stdout).to.include(
        `secondary 127.0.0.1:${secondary.port}: serial ${await env.ns.serial()}, current`,
      );
    });
  });
}
