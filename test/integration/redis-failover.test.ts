/**
 * Redis failover (docs/operators.md, "Redis failover"; RELIABILITY.md, "Redis failover"): a
 * primary, one replica and three redis-sentinel processes on loopback, a real Knot, and two
 * `serve` processes with redis.sentinels and redis.waitReplicas 1 under a steady update stream.
 * The primary is SIGKILLed mid-stream; after the promotion every `good` is in the new primary,
 * requests meanwhile answer 911 in bounded time, and the same two processes serve again.
 * And: waitReplicas with no replica connected answers 911, the state recorded on the primary.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, sleep } from '../support/bridge.js';
import { waitFor } from '../support/wait.js';
import {
  requireBinariesOrSkip,
  sentinelPrimary,
  startReplica,
  startSentinel,
  waitForSentinels,
  type LabProcess,
} from '../../src/lab/index.js';
import { HOST_FIELDS, Keys } from '../../src/store/index.js';

const UA = 'ddns-bridge-tests/1.0 tests@example.test';
const GROUP = 'ddns-failover';
const AUTH: [string, string] = ['fred', 'fred-pw'];
/** A request never takes longer than this, failover or not: 3 s plus a margin for a loaded machine. */
const MAX_REQUEST_MS = 3500;
const keys = new Keys('ddns:');
/** Replicas of the primary: 1 as the issue asks; FAILOVER_REPLICAS=2 measures the set-up docs/operators.md advises. */
const REPLICAS = Number(process.env.FAILOVER_REPLICAS ?? 1);

interface Sample {
  host: string;
  port: number;
  /** This host's n-th request (its address encodes n). */
  n: number;
  ip: string;
  start: number;
  end: number;
  body: string;
}

/** The n-th address of host number `h`: distinct and increasing per host. */
const ipOf = (h: number, n: number): string => `10.${h}.${(n >> 8) & 255}.${n & 255}`;
const nOf = (ip: string): number => {
  const [, , hi, lo] = ip.split('.').map(Number);
  return (hi! << 8) + lo!;
};

describe('Redis failover: a replica, three Sentinels, two serve processes (waitReplicas 1)', function () {
  this.timeout(120_000);
  let env: BridgeEnv | undefined;
  const replicas: LabProcess[] = [];
  const sentinels: LabProcess[] = [];

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'redis-sentinel', 'knotd']);
    env = await BridgeEnv.start({
      kind: 'knot',
      serves: 0,
      config: {
        log: { level: 'info' },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
    });
    // Independent processes (each on a free port of its own, its own config file): started side by side.
    replicas.push(
      ...(await Promise.all(
        Array.from({ length: REPLICAS }, () => startReplica({ dir: env!.dir, primary: env!.redis })),
      )),
    );
    sentinels.push(
      ...(await Promise.all(
        Array.from({ length: 3 }, () =>
          startSentinel({
            dir: env!.dir,
            name: GROUP,
            primary: env!.redis,
            quorum: 2,
            downAfterMs: 1000,
            failoverTimeoutMs: 3000,
          }),
        ),
      )),
    );
    await waitForSentinels(sentinels, GROUP, REPLICAS);
    // redis.url keeps only its database: the Sentinels name the primary.
    await env.writeConfig({
      redis: { sentinels: sentinels.map((s) => s.address), sentinelName: GROUP, waitReplicas: 1 },
    });
    await env.addAccount(...AUTH);
    await Promise.all([...A_HOSTS, ...B_HOSTS].map((h) => env!.addHost(h, 'fred')));
    await env.startServe();
    await env.startServe();
  });

  after(async () => {
    await Promise.all(sentinels.map((s) => s.stop()));
    await Promise.all(replicas.map((r) => r.stop()));
    await env?.stop();
  });

  /** Updated until the kill, then read from the promoted replica: no good may be missing. */
  const A_HOSTS = [0, 1, 2, 3].map((i) => `a${i}.${ZONE}`);
  /** Updated through the failover: 911 in bounded time, then good again. */
  const B_HOSTS = [0, 1].map((i) => `b${i}.${ZONE}`);

  it('SIGKILL of the primary: no acknowledged update lost, 911 in bounded time meanwhile, service resumes', async () => {
    const e = env!;
    const pids = e.serves.map((c) => c.pid);
    const samples: Sample[] = [];
    let stopA = false;
    let stopB = false;
    const inFlight = new Set<string>();
    const stream = async (host: string, h: number, stop: () => boolean): Promise<void> => {
      for (let n = 1; !stop(); n++) {
        const ip = ipOf(h, n);
        const port = e.ports[n % 2]!;
        const start = Date.now();
        inFlight.add(host);
        const r = await e.get(`/dyndns/update?hostname=${host}&myip=${ip}`, { auth: AUTH, ua: UA, port });
        inFlight.delete(host);
        samples.push({ host, port, n, ip, start, end: Date.now(), body: r.body.trim() });
        await sleep(40); // a client's pause between two requests: paces the stream
      }
    };
    const loops = [
      ...A_HOSTS.map((host, i) => stream(host, i, () => stopA)),
      ...B_HOSTS.map((host, i) => stream(host, 10 + i, () => stopB)),
    ];

    // A steady stream: every host updated a few times through each serve process.
    const answers = (host: string, port: number, after: number, body: (s: Sample) => boolean) =>
      samples.filter((s) => s.host === host && s.port === port && s.start > after && body(s)).length;
    await waitFor(
      () =>
        [...A_HOSTS, ...B_HOSTS].every((h) => e.ports.every((p) => answers(h, p, 0, (s) => s.body === good(s)) >= 5)),
      { what: '5 goods per host through each serve process', timeoutMs: 20_000 },
    );
    // Mid-stream: an A request in flight (and the B hosts wherever they are: a change in flight
    // at the kill holds its host for a lease, and the next request waits at most MAX_BUSY_WAIT_MS).
    const killable = () => A_HOSTS.some((h) => inFlight.has(h));
    for (const until = Date.now() + 5000; !killable();) {
      expect(Date.now(), 'a moment with an A request in flight').to.be.below(until);
      await sleep(1);
    }
    stopA = true;
    const killAt = Date.now();
    await e.redis.kill();

    // The promotion, as the Sentinels tell it.
    let promotedAt = 0;
    let replica: LabProcess | undefined;
    while (promotedAt === 0) {
      expect(Date.now() - killAt, 'promotion within 20 s').to.be.below(20_000);
      const named = await sentinelPrimary(sentinels[0]!, GROUP);
      replica = replicas.find((r) => r.address === named);
      if (replica) promotedAt = Date.now();
      else await sleep(50);
    }
    // The A hosts' last requests are answered by now (911 at the latest within MAX_REQUEST_MS).
    await Promise.all(loops.slice(0, A_HOSTS.length));
    const promoted = new Redis({ host: replica!.host, port: replica!.port, lazyConnect: true });
    const stored = new Map<string, string | null>();
    try {
      expect(await promoted.call('ROLE').then((r) => (r as string[])[0])).to.equal('master');
      for (const host of A_HOSTS) stored.set(host, await promoted.hget(keys.host(host), HOST_FIELDS.ipv4));
    } finally {
      promoted.disconnect();
    }

    // The operator's restart of the killed server (empty: no persistence here); the Sentinels
    // turn it into a replica of the new primary. With one replica, WAIT succeeds again only then.
    await e.redis.start();
    const resumed = (port: number) =>
      samples.some((s) => s.port === port && s.start > promotedAt && s.body.startsWith('good'));
    // A bound that only a wedged service misses: the restarted server must first become a replica (WAIT 1), which
    // took 40.1 s once on a loaded 2-core machine (usually 15-25 s).
    while (!e.ports.every(resumed)) {
      expect(Date.now() - killAt, 'good again on both serve processes within 60 s').to.be.below(60_000);
      await sleep(100);
    }
    const resumedAt = Math.max(
      ...e.ports.map((port) => samples.find((s) => s.port === port && s.start > killAt && s.body === good(s))!.end),
    );
    // Watched for a while after the resumption: a few requests per B host through each process.
    await waitFor(() => B_HOSTS.every((h) => e.ports.every((p) => answers(h, p, resumedAt, () => true) >= 4)), {
      what: '4 requests per B host through each serve process after the resumption',
      timeoutMs: 20_000,
    });
    stopB = true;
    await Promise.all(loops);

    if (process.env.FAILOVER_VERBOSE) {
      for (const s of samples.filter((x) => x.end - x.start > 900))
        console.log(s.host, s.port, s.body, s.start - killAt, s.end - killAt, promotedAt - killAt);
      console.log(
        e.logs
          .join('')
          .split('\n')
          .filter((l) => !l.includes('"msg":"update"'))
          .join('\n'),
      );
    }
    // Every reply was good or 911, in bounded time; the same processes serve.
    for (const s of samples) {
      expect([good(s), '911'], `${s.host} ${s.ip}`).to.include(s.body);
      expect(s.end - s.start, `${s.host} ${s.ip}: ${s.body}`).to.be.below(MAX_REQUEST_MS);
    }
    expect(e.serves.map((c) => c.pid)).to.deep.equal(pids);
    expect(e.serves.every((c) => c.exitCode === null && c.signalCode === null)).to.equal(true);

    // No acknowledged update lost: each A host holds its last good, or a later request's
    // address (one in flight at the kill, answered 911, may have been recorded).
    let lost = 0;
    for (const host of A_HOSTS) {
      const goods = samples.filter((s) => s.host === host && s.body === good(s));
      const lastGood = goods.at(-1)!;
      const last = samples.filter((s) => s.host === host).at(-1)!;
      const held = stored.get(host);
      expect(held, host).to.be.a('string');
      if (nOf(held!) < lastGood.n) lost++;
      expect(nOf(held!), `${host}: holds ${held}, last good ${lastGood.ip}`).to.be.within(lastGood.n, last.n);
    }
    expect(lost).to.equal(0);
    // After the resumption the B hosts are good again, through both processes.
    const after = samples.filter((s) => s.start > resumedAt);
    expect(after.length).to.be.above(0);
    expect(after.filter((s) => s.body === '911')).to.have.length(0);

    const duringFailover = samples.filter((s) => s.end > killAt && s.start < resumedAt);
    const figures = {
      requests: samples.length,
      goodsBeforeKill: samples.filter((s) => s.end <= killAt && s.body === good(s)).length,
      promotionMs: promotedAt - killAt,
      clientsGoodAgainMs: resumedAt - killAt,
      answered911: samples.filter((s) => s.body === '911').length,
      maxRequestMsDuringFailover: Math.max(...duringFailover.map((s) => s.end - s.start)),
      maxRequestMsBeforeKill: Math.max(...samples.filter((s) => s.end <= killAt).map((s) => s.end - s.start)),
      lostGoods: lost,
      replicas: REPLICAS,
    };
    console.log(`      failover figures: ${JSON.stringify(figures)}`);
  });
});

const good = (s: Sample): string => `good ${s.ip}`;

describe('redis.waitReplicas with no replica connected', function () {
  this.timeout(60_000);
  let env: BridgeEnv | undefined;
  const HOST = `lonely.${ZONE}`;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd']);
    env = await BridgeEnv.start({
      kind: 'knot',
      config: {
        redis: { waitReplicas: 1, commandTimeout: 1 },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
      serves: 0,
    });
    await env.addAccount(...AUTH);
    await env.addHost(HOST, 'fred');
    await env.startServe();
  });

  after(async () => {
    await env?.stop();
  });

  it('answers 911 after half of commandTimeout; the change is recorded on the primary, its retry is 911 too', async () => {
    const e = env!;
    const started = Date.now();
    const r = await e.get(`/dyndns/update?hostname=${HOST}&myip=192.0.2.7`, { auth: AUTH, ua: UA });
    const took = Date.now() - started;
    expect(r.body.trim()).to.equal('911');
    expect(took).to.be.within(450, 3000);
    // Published and recorded on the primary (the lease ended), but never acknowledged.
    const host = await e.hostJson(HOST);
    expect(host['addresses']).to.deep.equal(['192.0.2.7']);
    const records = await e.ns.query(HOST, 'A');
    expect(records).to.include('192.0.2.7');
    // The client's retry finds the state stored: nochg, but only once replicated, so 911 again.
    const retry = await e.get(`/dyndns/update?hostname=${HOST}&myip=192.0.2.7`, { auth: AUTH, ua: UA });
    expect(retry.body.trim()).to.equal('911');
    expect(e.logs.join('')).to.match(/0 of 1 replicas acknowledged the write within 500 ms/);
    expect(e.logs.join('')).to.include('"msg":"recorded but not yet replicated: not acknowledged"');
    expect(e.logs.join('')).to.not.include('published but could not record');
  });
});
