/**
 * `serve --workers 2`: one command, two node:cluster workers on the same port, state shared
 * through Redis. Concurrent requests for one host are counted exactly by the frequency rule;
 * concurrent changes of many hosts are all published; a dead worker is replaced (within a
 * bound); SIGTERM stops everything gracefully.
 */
import { expect } from 'chai';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { BridgeEnv, CLI, ZONE, sleep, writeRedisOnlyConfig } from '../support/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import { Redis } from 'ioredis';
import { makeTempDir, removeDir, requireBinariesOrSkip, startRedis } from '../../src/lab/index.js';
import { runHttpLoad } from '../../bench/load.js';
import { procCpu } from '../../bench/targets.js';
import { hashesPerWorker, WORKER_SEMI_SPACE_MIB } from '../../src/cli/commands/serve.js';
import { RedisMonitor } from '../support/redis-monitor.js';
import { waitFor } from '../support/wait.js';

const UA = 'ddns-bridge-tests/1.0 tests@example.test';

interface Cluster {
  child: ChildProcess;
  port: number;
  /** Everything the primary and its workers wrote on stderr so far. */
  log(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawn `serve --workers N` (as BridgeEnv.startServe does) and wait for the primary's "listening". */
async function startCluster(env: BridgeEnv, workers: number | 'auto'): Promise<Cluster> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', env.configPath, '--workers', String(workers)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DDNS_BRIDGE_CONFIG: '' },
  });
  let buf = '';
  child.stderr.on('data', (d: Buffer) => (buf += d.toString()));
  child.stdout.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve --workers did not start: ${buf.slice(-2000)}`)), 20000);
    const poll = setInterval(() => {
      const line = logLines(buf).find((l) => l.msg === 'listening');
      if (line) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(Number(line.port));
      }
    }, 20);
    void exited.then(({ code }) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`serve --workers exited with ${code}: ${buf.slice(-2000)}`));
    });
  });
  return { child, port, log: () => buf, exited };
}

function logLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const workerPids = (c: Cluster): number[] =>
  logLines(c.log())
    .filter((l) => l.msg === 'worker listening')
    .map((l) => Number(l.pid));

/**
 * Counts from now on the commands Redis is sent that name `host`'s key (MONITOR): a request for
 * the host is inside a worker, past its HTTP parsing, once one is seen (and retries while busy).
 */
async function watchHost(env: BridgeEnv, host: string): Promise<{ seen: () => number; close: () => void }> {
  const key = `ddns:h:${host}`;
  let seen = 0;
  const monitor = await RedisMonitor.open(env.redis.url, (l) => {
    if (l.args.includes(key)) seen++;
  });
  return { seen: () => seen, close: () => monitor.close() };
}

/** Another frontend's change in flight holds `host` for `ms` (by Redis's clock): an update of it waits. */
async function holdLease(env: BridgeEnv, host: string, ms: number): Promise<void> {
  const redis = new Redis(env.redis.url);
  try {
    const [sec, usec] = await redis.time();
    await redis.hset(
      `ddns:h:${host}`,
      'lk',
      'elsewhere',
      'lu',
      String(Number(sec) * 1000 + Math.floor(Number(usec) / 1000) + ms),
    );
  } finally {
    redis.disconnect();
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('serve --workers 2 (node:cluster)', function () {
  this.timeout(120000);
  let env: BridgeEnv;
  let cluster: Cluster | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', serves: 0, config: { log: { level: 'info' } } });
    await env.addAccount('fred', 'fred-pw');
    cluster = await startCluster(env, 2);
  });
  const running = (c: Cluster | undefined): c is Cluster =>
    c !== undefined && c.child.exitCode === null && c.child.signalCode === null;
  /** A fresh `serve --workers 2`, the one still running (when a test before it did not end it) stopped first. */
  async function restartCluster(): Promise<Cluster> {
    if (running(cluster)) {
      cluster.child.kill('SIGTERM');
      await cluster.exited;
    }
    return startCluster(env, 2);
  }

  after(async () => {
    if (cluster) {
      if (running(cluster)) cluster.child.kill('SIGKILL');
      // Also after a test that killed the primary itself: its workers must not outlive the run.
      for (const pid of workerPids(cluster)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    await env?.stop();
  });

  const up = (host: string, ip: string) =>
    env.get(`/dyndns/update?hostname=${host}&myip=${ip}`, { auth: ['fred', 'fred-pw'], ua: UA, port: cluster!.port });

  it('starts two workers on one port, each its own process', () => {
    const pids = workerPids(cluster!);
    expect(pids).to.have.length(2);
    expect(new Set(pids).size).to.equal(2);
    expect(pids).to.not.include(cluster!.child.pid);
    const listening = logLines(cluster!.log()).filter((l) => l.msg === 'worker listening');
    expect(listening.map((l) => l.port)).to.deep.equal([cluster!.port, cluster!.port]);
    // Password checks per worker: about one per CPU across the two.
    const hashes = hashesPerWorker(2, os.availableParallelism());
    expect(listening.map((l) => l.parallelHashes)).to.deep.equal([hashes, hashes]);
  });

  it('starts each worker with a bounded young generation (the primary keeps its own options)', () => {
    const argvOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
    for (const pid of workerPids(cluster!))
      expect(argvOf(pid)).to.include(`--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`);
    expect(argvOf(cluster!.child.pid!).some((a) => a.includes('semi-space'))).to.equal(false);
  });

  it('spreads connections over both workers (each spends CPU on them)', async () => {
    const pids = workerPids(cluster!);
    const before = await Promise.all(pids.map((p) => procCpu([p])));
    const m = await runHttpLoad({
      host: '127.0.0.1',
      port: cluster!.port,
      concurrency: 16,
      requests: 2000,
      maxSeconds: 20,
      request: () => 'GET /no-such-path HTTP/1.0\r\n\r\n',
      expect: (_i, _s, body) => body.length > 0,
    });
    expect(m.errors, m.firstError).to.equal(0);
    const after = await Promise.all(pids.map((p) => procCpu([p])));
    const used = after.map((a, i) => a - before[i]!);
    const total = used[0]! + used[1]!;
    // Neither worker idles while the other does the work.
    for (const u of used) expect(u, `per-worker CPU seconds ${used.join(' / ')}`).to.be.at.least(total * 0.15);
  });

  it('counts concurrent requests for one host exactly across the workers', async () => {
    const h = `race.${ZONE}`;
    await env.addHost(h, 'fred');
    const n = 12;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => up(h, `192.0.2.${100 + i}`)));
    const bodies = replies.map((r) => r.body);
    // the first is not frequent, the next three are frequent but served, every later one is abuse
    expect(bodies.filter((b) => b === 'abuse\n')).to.have.length(n - 4, bodies.join(''));
    expect(bodies.filter((b) => /^(good|nochg) /.test(b))).to.have.length(4, bodies.join(''));
    const shown = await env.hostJson(h);
    expect(shown.state).to.equal('blocked');
    expect(await env.ns.query(h, 'A')).to.deep.equal([shown.ipv4]);
  });

  it('publishes concurrent changes of many hosts: every reply good, every record in DNS', async () => {
    const hosts = Array.from({ length: 60 }, (_, i) => `many-${i}.${ZONE}`);
    const r = await env.cli(['host', 'import', '-'], hosts.map((h) => `${h} fred`).join('\n'));
    expect(r.code).to.equal(0, r.stderr);
    const ip = (i: number) => `198.51.100.${i + 1}`;
    const replies = await Promise.all(hosts.map((h, i) => up(h, ip(i))));
    expect(replies.map((x) => x.body)).to.deep.equal(hosts.map((_, i) => `good ${ip(i)}\n`));
    const published = await Promise.all(hosts.map((h) => env.ns.query(h, 'A')));
    expect(published).to.deep.equal(hosts.map((_, i) => [ip(i)]));
  });

  it('replaces a worker that dies, and keeps serving', async () => {
    const [victim] = workerPids(cluster!);
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => workerPids(cluster!).length === 3, { timeoutMs: 15000, what: 'a replacement worker' });
    expect(cluster!.log()).to.include('"worker died; starting another"');
    const h = `after-restart.${ZONE}`;
    await env.addHost(h, 'fred');
    for (let i = 0; i < 4; i++) expect((await up(h, `203.0.113.${i + 1}`)).body).to.equal(`good 203.0.113.${i + 1}\n`);
  });

  it('a replacement worker serves the config the service started with, not the file edited (here: broken) since', async () => {
    const hosts = Array.from({ length: 8 }, (_, i) => `after-edit-${i}.${ZONE}`);
    await Promise.all(hosts.map((h) => env.addHost(h, 'fred')));
    const original = readFileSync(env.configPath, 'utf8');
    writeFileSync(env.configPath, '{ "zones": [ broken');
    try {
      const before = workerPids(cluster!).length;
      const [victim] = workerPids(cluster!).filter(alive);
      process.kill(victim!, 'SIGKILL');
      await waitFor(() => workerPids(cluster!).length === before + 1, {
        timeoutMs: 15000,
        what: 'a replacement worker',
      });
      // Enough connections that the replacement takes some (each worker accepts for itself).
      for (const [i, h] of hosts.entries())
        expect((await up(h, `203.0.113.${i + 10}`)).body).to.equal(`good 203.0.113.${i + 10}\n`);
      const denied = await env.get(`/dyndns/update?hostname=${hosts[0]}`, {
        auth: ['fred', 'wrong'],
        ua: UA,
        port: cluster!.port,
      });
      expect(denied.raw.toString()).to.include('WWW-Authenticate: Basic realm="ddns-bridge"');
      expect(cluster!.log()).to.not.include('invalid JSON');
    } finally {
      writeFileSync(env.configPath, original);
    }
  });

  it('SIGTERM to the primary stops the workers gracefully: exit 0, no worker left', async () => {
    const pids = workerPids(cluster!).filter(alive);
    expect(pids).to.have.length(2);
    cluster!.child.kill('SIGTERM');
    const { code } = await cluster!.exited;
    expect(code).to.equal(0);
    const lines = logLines(cluster!.log());
    expect(
      lines
        .filter((l) => l.msg === 'worker stopped')
        .map((l) => Number(l.pid))
        .sort(),
    ).to.deep.equal([...pids].sort());
    expect(lines.at(-1)?.msg).to.equal('stopped');
    await waitFor(() => pids.every((p) => !alive(p)), { timeoutMs: 5000, what: 'the workers to be gone' });
  });

  it('gives up with exit 1 when workers keep dying (bounded restarts per minute)', async () => {
    cluster = await startCluster(env, 2);
    let killed = 0;
    while (cluster.child.exitCode === null && killed < 30) {
      const pid = workerPids(cluster).find(alive);
      if (pid === undefined) {
        await sleep(25);
        continue;
      }
      process.kill(pid, 'SIGKILL');
      killed++;
      await waitFor(() => !alive(pid), { timeoutMs: 5000, what: 'the killed worker to be gone' });
    }
    const { code } = await cluster.exited;
    expect(code).to.equal(1);
    expect(cluster.log()).to.include('"workers keep dying; giving up"');
    // 10 restarts allowed, the 11th death ends it.
    expect(logLines(cluster.log()).filter((l) => l.msg === 'worker died; starting another')).to.have.length(10);
    await waitFor(() => workerPids(cluster!).every((p) => !alive(p)), {
      timeoutMs: 5000,
      what: 'the workers to be gone',
    });
  });

  it('--workers auto forks one worker per CPU (as the systemd unit runs it)', async () => {
    // A maxInFlight that the workers together could take past BIND's update-quota: one warning, from the primary.
    await env.writeConfig({ dns: { maxInFlight: 101 } });
    try {
      cluster = await startCluster(env, 'auto');
    } finally {
      await env.writeConfig({});
    }
    const cpus = Math.min(os.availableParallelism(), 8);
    const quota = logLines(cluster.log()).filter((l) => l.level === 'warn' && /update-quota/.test(String(l.msg)));
    expect(quota.map((l) => l.msg)).to.deep.equal([
      `up to ${101 * cpus} UPDATE messages at once to 127.0.0.1:${env.ns.port} (${ZONE}: maxInFlight × ${cpus} worker(s)): if it is BIND, raise its update-quota (default 100) above that, or lower maxInFlight`,
    ]);
    expect(logLines(cluster.log()).find((l) => l.msg === 'listening')?.workers).to.equal(cpus);
    expect(new Set(workerPids(cluster))).to.have.property('size', cpus);
    const h = `auto-workers.${ZONE}`;
    await env.addHost(h, 'fred');
    expect((await up(h, '203.0.113.77')).body).to.equal('good 203.0.113.77\n');
    cluster.child.kill('SIGTERM');
    expect((await cluster.exited).code).to.equal(0);
  });

  it('SIGTERM to every process at once (systemd, Ctrl-C): the request in flight is still answered, exit 0', async () => {
    cluster = await restartCluster();
    const h = `in-flight.${ZONE}`;
    await env.addHost(h, 'fred');
    // Another frontend's change in flight holds the host for 1.5 s: this request waits for it.
    await holdLease(env, h, 1500);
    const redis = await watchHost(env, h);
    const reply = up(h, '203.0.113.88');
    await waitFor(() => redis.seen() > 0, { what: 'the request to reach a worker and Redis' }).finally(redis.close);
    const pids = [cluster.child.pid!, ...workerPids(cluster)];
    for (const pid of pids) process.kill(pid, 'SIGTERM');
    expect((await reply).body, 'answered, not cut off by the second SIGTERM').to.equal('good 203.0.113.88\n');
    expect((await cluster.exited).code).to.equal(0);
    expect(logLines(cluster.log()).filter((l) => l.msg === 'worker stopped')).to.have.length(2);
  });

  it('the primary killed (crash, OOM): the request in flight is answered, then each worker stops by itself', async () => {
    cluster = await restartCluster();
    const workers = workerPids(cluster);
    const h = `primary-killed.${ZONE}`;
    await env.addHost(h, 'fred');
    await holdLease(env, h, 1500);
    let answered = false;
    const redis = await watchHost(env, h);
    const reply = up(h, '203.0.113.89').finally(() => (answered = true));
    await waitFor(() => redis.seen() > 0, { what: 'the request to reach a worker and Redis' }).finally(redis.close);
    expect(answered, 'still waiting for the lease when the primary dies').to.equal(false);
    cluster.child.kill('SIGKILL');
    expect((await reply).body, 'answered, not cut off').to.equal('good 203.0.113.89\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['203.0.113.89']);
    await waitFor(() => workers.every((p) => !alive(p)), { timeoutMs: 10000, what: 'the workers to end' });
    const lines = logLines(cluster.log());
    expect(lines.filter((l) => l.msg === 'worker stopping').map((l) => l.reason)).to.deep.equal([
      'primary gone',
      'primary gone',
    ]);
    expect(
      lines
        .filter((l) => l.msg === 'worker stopped')
        .map((l) => Number(l.pid))
        .sort(),
    ).to.deep.equal([...workers].sort());
  });
});

/**
 * A process that is a cluster worker by node's own mark (NODE_UNIQUE_ID), forked by this test
 * instead of a cluster primary: `primary` plays the primary's side of the IPC channel.
 */
function forkLoneWorker(primary: (child: ChildProcess, m: { kind?: string }) => void) {
  const child = fork(CLI, ['serve', '--workers', '2'], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
    env: { ...process.env, NODE_UNIQUE_ID: '1', DDNS_BRIDGE_CONFIG: '' },
  });
  child.on('message', (m: { kind?: string }) => primary(child, m));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { exited, stderr: () => stderr };
}

describe('serve --workers: a worker whose primary never sends the config', function () {
  this.timeout(30000);

  it('ends after 10 s with an error that says why, instead of never listening', async () => {
    // It answers nothing, as a primary of an older version would not.
    const started = Date.now();
    const asked: unknown[] = [];
    const worker = forkLoneWorker((_child, m) => asked.push(m));
    const exited = await worker.exited;
    const took = Date.now() - started;
    expect(asked, 'it asked for its config').to.deep.include({ kind: 'config?' });
    expect(exited, 'a worker that failed, for the primary to see').to.deep.equal({ code: 1, signal: null });
    expect(took, 'waited the whole 10 s').to.be.at.least(9900);
    expect(took, 'then ended').to.be.below(25000);
    expect(worker.stderr()).to.include('no config from the primary within 10 s');
    expect(worker.stderr()).to.not.include('worker listening');
  });

  it('a primary that goes away while the worker starts: the worker, stuck asking it for its listen socket, still ends (30 s)', async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    this.timeout(60000);
    const dir = await makeTempDir('ddns-worker-orphan-');
    const redis = await startRedis({ dir });
    try {
      const config = await loadConfig(await writeRedisOnlyConfig(dir, { url: redis.url }), {});
      const started = Date.now();
      // The config, then gone at once: the worker connects to Redis and asks this "primary"
      // for its listen socket, which nobody will ever answer.
      const worker = forkLoneWorker((child, m) => {
        if (m?.kind !== 'config?') return;
        child.send({ kind: 'config', config });
        child.disconnect();
      });
      expect(await worker.exited, worker.stderr()).to.deep.equal({ code: 1, signal: null });
      expect(Date.now() - started, 'after the grace of 30 s').to.be.at.least(29900);
      expect(worker.stderr()).to.not.include('worker listening');
    } finally {
      await redis.stop();
      await removeDir(dir);
    }
  });

  it('a primary that goes away before it sent the config: the worker says so and exits 1', async () => {
    const worker = forkLoneWorker((child, m) => {
      if (m?.kind === 'config?') child.disconnect();
    });
    expect(await worker.exited, worker.stderr()).to.deep.equal({ code: 1, signal: null });
    expect(worker.stderr()).to.include('the primary stopped before it sent the config');
  });
});
