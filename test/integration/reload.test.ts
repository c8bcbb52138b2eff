/**
 * SIGHUP reloads the config file (docs/operators.md, "Reload"): the block list, frequency, junk
 * and credential limits and the log level take effect without a dropped request, in a single
 * process and in every worker (and in a worker started after the reload); a change that needs a
 * restart is logged and ignored; an invalid file changes nothing. Certificates: https.test.ts.
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import { BridgeEnv, ZONE, deepMerge } from '../support/bridge.js';
import { Serve } from '../support/serve-process.js';
import { clearLoginCounters } from '../support/bridge-commands.js';
import { waitFor } from '../support/wait.js';

const KEYS = new Keys('ddns:');
const ALICE = { user: 'reload-alice', password: 'reload-alice-pw' };
const BLOCKED_UA = 'ReloadBot/2.0';
const ADMIN_TOKEN = 'reload-admin-token-0123456789abcdef0123456789';
const START: Record<string, unknown> = {
  frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
  credentials: { maxFailures: 1000, window: 60, cooldown: 30 },
  log: { level: 'info' },
};

/** Updates from `clients` loops until stopped; every answer and every failure kept. */
class UpdateLoad {
  readonly answers: string[] = [];
  readonly failures: string[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(env: BridgeEnv, port: number, hosts: string[]) {
    this.loops = hosts.map(async (host, i) => {
      for (let n = 0; this.running; n++) {
        try {
          const r = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.${(n % 2) + 10 + i * 2}`, {
            auth: [ALICE.user, ALICE.password],
            ua: 'ReloadLoad/1.0',
            port,
          });
          this.answers.push(r.body);
        } catch (err) {
          this.failures.push((err as Error).message);
        }
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

describe('SIGHUP reloads the config: live settings applied, the rest left (knot)', function () {
  this.timeout(120_000);
  let env: BridgeEnv;
  let raw: Redis;
  let adminPort: number;
  const hosts = [0, 1, 2].map((i) => `reload-${process.pid}-${i}.${ZONE}`);

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({ kind: 'knot', serves: 0, config: START });
    // The admin listener's health checks log at debug level: they show the level changed.
    adminPort = await freePort();
    await writeFile(path.join(env.dir, 'admin.token'), ADMIN_TOKEN, { mode: 0o600 });
    START.admin = { listen: [`127.0.0.1:${adminPort}`], tokenFile: path.join(env.dir, 'admin.token') };
    raw = new Redis(env.redis.url);
    await env.addAccount(ALICE.user, ALICE.password);
    await Promise.all(hosts.map((h) => env.addHost(h, ALICE.user)));
  });

  after(async () => {
    raw?.disconnect();
    await env?.stop();
  });

  /** The config file as the tests start it, with `patch` merged in. */
  const rewrite = (patch: Record<string, unknown>) => env.writeConfig(deepMerge(START, patch));

  beforeEach(async () => {
    await env.writeConfig(START);
    await clearLoginCounters(raw, KEYS);
  });

  const blockedAnswer = async (port: number): Promise<string> =>
    (await env.get(`/nic/update?hostname=${hosts[0]}&myip=192.0.2.99`, { auth: ['x', 'y'], ua: BLOCKED_UA, port }))
      .body;

  it('one process: under a steady load, the block list, log level and limits change; listen and zones are left', async () => {
    const serve = await Serve.start(env, 1);
    try {
      expect(await blockedAnswer(serve.port)).to.equal('badauth\n');
      expect((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status).to.equal(200);
      const load = new UpdateLoad(env, serve.port, hosts);
      // Reloaded under load: answers are coming before the SIGHUP, and go on after it.
      await waitFor(() => load.answers.length >= 10 || load.failures.length > 0, { what: '10 answers to the load' });
      await rewrite({
        agents: { blocked: ['ddclient/3.8.1', `ReloadBot/*`] },
        log: { level: 'debug' },
        credentials: { maxFailures: 1 },
        junk: { threshold: 50 },
        frequency: { maxFrequent: 5 },
        // Need a restart: reported, left as they were.
        listen: ['127.0.0.1:1'],
        dns: { timeout: 9 },
      });
      const since = serve.lines.length;
      serve.child.kill('SIGHUP');
      const [reloaded] = await serve.waitFor((l) => l.msg === 'reloaded', 1, 10_000, since);
      expect(reloaded!.settings).to.deep.equal(['frequency', 'agents', 'junk', 'credentials', 'log']);
      const [restart] = await serve.waitFor(
        (l) => l.msg === 'reload: these settings need a restart; left as they were',
        1,
        1,
        since,
      );
      expect(restart!.settings).to.deep.equal(['listen', 'dns']);
      const atReload = load.answers.length;
      const enough = Math.max(atReload + 10, 21); // more than the 20 asserted below
      await waitFor(() => load.answers.length >= enough || load.failures.length > 0, {
        what: '10 more answers to the load after the reload',
      });
      await load.stop();

      // No request of the load was dropped or refused across the reload.
      expect(load.failures).to.deep.equal([]);
      expect(load.answers.length).to.be.greaterThan(20);
      for (const a of load.answers) expect(a).to.match(/^(good|nochg) 192\.0\.2\.\d+\n$/);
      // The new block list, at once; the old listener still serves (listen was left).
      expect(await blockedAnswer(serve.port)).to.equal('badagent\n');
      // The log level: a health check logs a debug line now, and did not before.
      expect(serve.lines.slice(0, since).some((l) => l.level === 'debug')).to.equal(false);
      expect((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status).to.equal(200);
      await serve.waitFor((l) => l.level === 'debug' && l.msg === 'admin request', 1, 5000, since);
      // The credential limit: one wrong password now starts the cool-down.
      const wrong = await env.get(`/nic/update?hostname=${hosts[0]}&myip=192.0.2.50`, {
        auth: [ALICE.user, 'wrong'],
        port: serve.port,
      });
      expect(wrong.body).to.equal('badauth\n');
      const right = await env.get(`/nic/update?hostname=${hosts[0]}&myip=192.0.2.51`, {
        auth: [ALICE.user, ALICE.password],
        port: serve.port,
      });
      expect(right.body).to.equal('badauth\n');
    } finally {
      await serve.stop();
    }
  });

  it('an invalid file changes nothing and says why; the next valid one applies (block list, frequency rule)', async () => {
    const serve = await Serve.start(env, 1);
    try {
      // Three changes of one host in a row: all good under the start config's frequency rule.
      const host = `freq-${process.pid}.${ZONE}`;
      await env.addHost(host, ALICE.user);
      const change = async (i: number) =>
        (
          await env.get(`/nic/update?hostname=${host}&myip=192.0.2.${30 + i}`, {
            auth: [ALICE.user, ALICE.password],
            port: serve.port,
          })
        ).body;
      for (let i = 0; i < 3; i++) expect(await change(i)).to.equal(`good 192.0.2.${30 + i}\n`);

      await writeFile(env.configPath, '{ "zones": [ broken');
      let since = serve.lines.length;
      serve.child.kill('SIGHUP');
      const [invalid] = await serve.waitFor(
        (l) => l.msg === 'reload: the config file is not valid; none of it applied',
        1,
        10_000,
        since,
      );
      expect(invalid!.error).to.equal(`config: ${env.configPath}: invalid JSON`);
      const [kept] = await serve.waitFor((l) => l.msg === 'reloaded', 1, 10_000, since);
      expect(kept!.settings).to.deep.equal([]);
      expect(await blockedAnswer(serve.port)).to.equal('badauth\n');

      await rewrite({ agents: { blocked: [BLOCKED_UA] }, frequency: { minInterval: 60, maxFrequent: 1 } });
      since = serve.lines.length;
      serve.child.kill('SIGHUP');
      const [applied] = await serve.waitFor((l) => l.msg === 'reloaded', 1, 10_000, since);
      expect(applied!.settings).to.deep.equal(['frequency', 'agents']);
      expect(await blockedAnswer(serve.port)).to.equal('badagent\n');
      // The reloaded rule: at most one frequent request in a row, then the host is blocked.
      expect(await change(3)).to.equal('good 192.0.2.33\n');
      expect(await change(4)).to.equal('abuse\n');
    } finally {
      await serve.stop();
    }
  });

  it('serve --workers 2: every worker applies it, and a worker started later runs the reloaded config', async () => {
    const serve = await Serve.start(env, 2);
    try {
      await rewrite({ agents: { blocked: [BLOCKED_UA] } });
      const since = serve.lines.length;
      serve.child.kill('SIGHUP');
      const reloaded = await serve.waitFor((l) => l.msg === 'reloaded', 2, 10_000, since);
      for (const l of reloaded) expect(l).to.include({ reason: 'SIGHUP to the primary' });
      for (const l of reloaded) expect(l.settings).to.deep.equal(['agents']);
      // The kernel spreads connections over both workers: every answer is the new one.
      for (let i = 0; i < 16; i++) expect(await blockedAnswer(serve.port)).to.equal('badagent\n');

      // A worker dies; its replacement gets the config as reloaded, not as started.
      const pids = serve.lines.filter((l) => l.msg === 'worker listening').map((l) => Number(l.pid));
      process.kill(pids[0]!, 'SIGKILL');
      await serve.waitFor((l) => l.msg === 'worker listening', 3, 15_000);
      for (let i = 0; i < 16; i++) expect(await blockedAnswer(serve.port)).to.equal('badagent\n');
    } finally {
      await serve.stop();
    }
  });
});
