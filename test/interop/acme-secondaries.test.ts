/**
 * Issue 30's ACME proof: pebble's DNS-01 validation asks a lagging secondary (`-dnsserver` at a Knot
 * secondary of the Knot primary) instead of the primary. The secondary serves each change LAG_MS after the
 * primary does (it is kept frozen, and thawed LAG_MS after the primary changed). Through a serve process whose
 * zone lists no secondaries, `present` is answered at once and lego httpreq and certbot's manual hooks are
 * refused (pebble finds no TXT record there); through one that follows the secondary, each `present` is
 * answered once the secondary serves the value, and both get a certificate for H and *.H. Each wait is
 * measured (`ddns_bridge_secondary_wait_seconds` on the admin listener), bounded by acme.propagationTimeout,
 * and printed.
 */
import { expect } from 'chai';
import path from 'node:path';
import {
  freePort,
  makeTempDir,
  removeDir,
  startPebble,
  writePrivateFile,
  type KnotSecondary,
  type NameServer,
  type Pebble,
} from '../../src/lab/index.js';
import { type BridgeEnv } from '../support/bridge.js';
import { family } from '../support/metrics-fixture.js';
import { waitFor } from '../support/wait.js';
import {
  CERTBOT_AUTH_HOOK,
  CERTBOT_CLEANUP_HOOK,
  certbotCertificateFile,
  httpreqEnv,
  inspectCertificate,
  legoCertificateFile,
  runCertbot,
  runLego,
} from './acme-clients.js';
import { clientDir, redact, requireInterop, startInteropEnv, uniqueHost, type ProcResult } from './support.js';

const ACCOUNT = { name: 'sally', password: 'sally-account-pw' };
/** How long after the primary the secondary serves a change: longer than lego and pebble take to ask it. */
const LAG_MS = 6000;
/** acme.propagationTimeout: under lego httpreq's HTTP timeout (30 s), over the lag. */
const BOUND_S = 20;
const TOKEN = 'c'.repeat(24) + '0123456789abcdef0123456789abcdef';
/** What pebble says when the name it asks has no (or not this) TXT value: an unauthorized problem. */
const NOT_SERVED = /No TXT records found for DNS challenge|Error retrieving TXT records|Correct value not found/;

/** What a lag saw: the changes of the primary it held back, and the lag (ms) of each one that ran its course. */
interface Lagged {
  changes: number;
  lags: number[];
}

/** A secondary made to lag: stop() ends the lag (the one under way is cut short) once the secondary caught up. */
interface Lag {
  stop(): Promise<Lagged>;
}

/**
 * Keep `secondary` frozen; each time the primary's serial moves, thaw it `lagMs` later, until it serves that
 * serial, and freeze it again. A change is served by the secondary `lagMs` (and a poll) after the primary's.
 */
async function lagBehind(secondary: KnotSecondary, primary: NameServer, lagMs: number): Promise<Lag> {
  await secondary.freeze();
  let frozen = true;
  let stopping = false;
  let wake = (): void => undefined;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const seen: Lagged = { changes: 0, lags: [] };
  const run = async (): Promise<void> => {
    let held = await secondary.serial();
    while (!stopping) {
      if ((await primary.serial()) === held) {
        await nap(100);
        continue;
      }
      const changed = Date.now();
      seen.changes++;
      await nap(lagMs);
      const cut = stopping;
      const target = await primary.serial();
      await secondary.thaw();
      frozen = false;
      await waitFor(async () => (await secondary.serial()) >= target, {
        what: `the thawed secondary to serve serial ${target}`,
        intervalMs: 20,
      });
      if (!cut) seen.lags.push(Date.now() - changed);
      if (stopping) break;
      await secondary.freeze();
      frozen = true;
      held = await secondary.serial();
    }
  };
  const loop = run().then(
    () => undefined,
    (err: unknown) => err,
  );
  return {
    async stop() {
      stopping = true;
      wake();
      const failed = await loop;
      if (frozen) await secondary.thaw();
      if (failed !== undefined) throw failed;
      await secondary.waitForSerial(primary);
      return seen;
    },
  };
}

describe('ACME DNS-01 against a lagging secondary: pebble asks it; refused without the wait, H and *.H with it (knotd)', function () {
  this.timeout(120_000);
  let env: BridgeEnv;
  let knot: KnotSecondary;
  let pebble: Pebble;
  let tokenDir: string;
  let adminPort: number;
  /** The serve process whose zone lists no secondaries: it answers a TXT set at once. */
  let noWaitPort: number;

  before(async function () {
    requireInterop(this, ['knotc', 'pebble', 'lego', 'certbot', 'curl', 'openssl']);
    adminPort = await freePort();
    tokenDir = await makeTempDir('ddns-acme-sec-token-');
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writePrivateFile(tokenFile, TOKEN + '\n');
    env = await startInteropEnv(
      'knot',
      {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
        acme: { propagationTimeout: BOUND_S },
      },
      { secondaries: { kinds: ['knot'] } },
    );
    knot = env.secondaries[0] as KnotSecondary;
    // The same bridge (Redis, primary, key) but not following the secondary: a second serve process started
    // from a config whose zone lists none (and whose admin listener is elsewhere); the file is put back after.
    const zones = (env.config['zones'] as Record<string, unknown>[]).map(({ secondaries: _, ...zone }) => zone);
    await env.writeConfig({ zones, admin: { listen: [`127.0.0.1:${await freePort()}`] } });
    noWaitPort = await env.startServe();
    await env.writeConfig({});
    pebble = await startPebble({ dir: await clientDir(env, 'pebble'), dnsServer: { port: knot.port } });
    await env.addAccount(ACCOUNT.name, ACCOUNT.password);
  });
  after(async () => {
    await pebble?.stop();
    await env?.stop();
    if (tokenDir) await removeDir(tokenDir);
  });

  const bridge = (port: number): string => `http://127.0.0.1:${port}`;

  async function host(label: string): Promise<string> {
    const h = uniqueHost(label);
    await env.addHost(h, ACCOUNT.name);
    return h;
  }

  /** Count and sum of the served and timed-out waits for the secondaries, from the admin listener. */
  async function waits(): Promise<{ served: number; sum: number; timeouts: number }> {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const value = (metric: string, outcome: string): number => {
      const line = family(text, `ddns_bridge_secondary_wait_seconds_${metric}`).find((l) =>
        l.includes(`outcome="${outcome}"`),
      );
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };
    return { served: value('count', 'served'), sum: value('sum', 'served'), timeouts: value('count', 'timeout') };
  }

  /**
   * Each wait of the serve process following the secondary while `client` runs, in seconds (the metric read
   * every 100 ms: the waits of one run come one after the other, seconds apart), and the run's timeouts.
   */
  async function measured<T>(client: () => Promise<T>): Promise<{ result: T; waited: number[]; timeouts: number }> {
    const start = await waits();
    let last = start;
    const waited: number[] = [];
    let running = true;
    const sample = async (): Promise<void> => {
      const now = await waits();
      const n = now.served - last.served;
      for (let i = 0; i < n; i++) waited.push((now.sum - last.sum) / n);
      last = now;
    };
    const sampler = (async () => {
      while (running) {
        await sample();
        await new Promise((r) => setTimeout(r, 100));
      }
      await sample();
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    const ran = await client().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    running = false;
    const failed = await sampler;
    if ('error' in ran) throw ran.error;
    if (failed !== undefined) throw failed;
    return { result: ran.result, waited, timeouts: last.timeouts - start.timeouts };
  }

  /** `client` run while the secondary lags; the lags it saw. */
  async function whileLagging(client: () => Promise<ProcResult>): Promise<{ result: ProcResult } & Lagged> {
    const lag = await lagBehind(knot, env.ns, LAG_MS);
    const ran = await client().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    // Even when the client could not run: the next test starts from a secondary that is current and thawed.
    const seen = await lag.stop();
    if ('error' in ran) throw ran.error;
    return { result: ran.result, ...seen };
  }

  function shown(result: ProcResult): string {
    return `exit ${result.code} ${result.signal ?? ''}\n${redact(result.output).split(ACCOUNT.password).join('<secret>').slice(-4000)}`;
  }

  function expectRefused(result: ProcResult): void {
    expect(result.code, shown(result)).to.not.equal(0);
    expect(result.output, shown(result)).to.match(/unauthorized/);
    expect(result.output, shown(result)).to.match(NOT_SERVED);
  }

  async function expectCertificate(file: string, h: string, scratch: string): Promise<void> {
    const issued = await inspectCertificate(file, pebble, scratch);
    expect(issued.names).to.deep.equal([`*.${h}`, h]);
    expect(issued.verify.code, issued.verify.output).to.equal(0);
  }

  const seconds = (values: number[], scale = 1): string =>
    values.map((v) => `${(v * scale).toFixed(1)} s`).join(', ') || 'none';

  function lego(dir: string, h: string, port: number): Promise<ProcResult> {
    return runLego({
      dir,
      pebble,
      nameserverPort: env.ns.port,
      email: 'sally@example.test',
      domains: [h, `*.${h}`],
      provider: 'httpreq',
      env: httpreqEnv(bridge(port), ACCOUNT.name, ACCOUNT.password),
    });
  }

  async function certbot(dir: string, h: string, port: number): Promise<ProcResult> {
    const netrc = path.join(dir, 'ddns-bridge.netrc');
    await writePrivateFile(netrc, `machine 127.0.0.1 login ${ACCOUNT.name} password ${ACCOUNT.password}\n`);
    return runCertbot({
      dir,
      pebble,
      domains: [h, `*.${h}`],
      authHook: CERTBOT_AUTH_HOOK,
      cleanupHook: CERTBOT_CLEANUP_HOOK,
      env: { BRIDGE: bridge(port), NETRC: netrc },
    });
  }

  it('without the wait (no secondaries listed): lego httpreq is refused, pebble finding no TXT on the secondary', async () => {
    const h = await host('lego-nowait');
    const dir = await clientDir(env, 'lego');
    const started = Date.now();
    const { result, changes } = await whileLagging(() => lego(dir, h, noWaitPort));
    expectRefused(result);
    expect(changes, 'the bridge published the values on the primary').to.be.above(0);
    console.log(`      lego without the wait: refused after ${seconds([(Date.now() - started) / 1000])}`);
  });

  it('without the wait: certbot --manual with the update-endpoint hooks is refused the same way', async () => {
    const h = await host('certbot-nowait');
    const dir = await clientDir(env, 'certbot');
    const started = Date.now();
    const { result, changes } = await whileLagging(() => certbot(dir, h, noWaitPort));
    expectRefused(result);
    expect(changes, 'the bridge published the values on the primary').to.be.above(0);
    console.log(`      certbot without the wait: refused after ${seconds([(Date.now() - started) / 1000])}`);
  });

  it('with the wait: lego httpreq gets H and *.H, each present answered once the secondary serves it', async () => {
    const h = await host('lego-wait');
    const dir = await clientDir(env, 'lego');
    const started = Date.now();
    const { result: run, waited, timeouts } = await measured(() => whileLagging(() => lego(dir, h, env.port)));
    const took = (Date.now() - started) / 1000;
    expect(run.result.code, shown(run.result)).to.equal(0);
    await expectCertificate(legoCertificateFile(dir, h), h, dir);
    expectWaited(waited, timeouts);
    expect(await env.ns.query(`_acme-challenge.${h}`, 'TXT')).to.deep.equal([]);
    console.log(
      `      lego with the wait: presents waited ${seconds(waited)} (bound ${BOUND_S} s); ` +
        `secondary lag ${seconds(run.lags, 1 / 1000)}; issued in ${took.toFixed(1)} s`,
    );
  });

  it('with the wait: certbot --manual hooks get H and *.H, each txt= answered once the secondary serves it', async () => {
    const h = await host('certbot-wait');
    const dir = await clientDir(env, 'certbot');
    const started = Date.now();
    const { result: run, waited, timeouts } = await measured(() => whileLagging(() => certbot(dir, h, env.port)));
    const took = (Date.now() - started) / 1000;
    expect(run.result.code, shown(run.result)).to.equal(0);
    await expectCertificate(certbotCertificateFile(dir, h), h, dir);
    expectWaited(waited, timeouts);
    expect(await env.ns.query(`_acme-challenge.${h}`, 'TXT')).to.deep.equal([]);
    console.log(
      `      certbot with the wait: txt= waited ${seconds(waited)} (bound ${BOUND_S} s); ` +
        `secondary lag ${seconds(run.lags, 1 / 1000)}; issued in ${took.toFixed(1)} s`,
    );
  });

  /**
   * Two sets (H and *.H), each answered once the secondary served it, within the bound: the first at least
   * waited out the lag (the secondary cannot serve it sooner), none gave up.
   */
  function expectWaited(waited: number[], timeouts: number): void {
    expect(timeouts, 'no wait reached acme.propagationTimeout').to.equal(0);
    expect(waited).to.have.length(2);
    expect(waited[0], 'the first set waited for the lag').to.be.at.least((LAG_MS - 500) / 1000);
    for (const w of waited) expect(w).to.be.below(BOUND_S);
  }
});
