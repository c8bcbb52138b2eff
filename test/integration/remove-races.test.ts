/**
 * `host remove` racing an update, through the real `serve` process and the CLI:
 * - an update whose Redis hangs past its lease: remove takes the lease over and deletes the
 *   host; the stalled update must not be answered good, nor leave an A record behind;
 * - a remove whose DNS delete fails on a host whose lease had expired with a repair due: the
 *   repair stays due, and the reconciler republishes the recorded address once the primary is back.
 */
import { expect } from 'chai';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, expectedReply, sleep } from '../support/bridge.js';
import { requireBinariesOrSkip, writeKeyFile } from '../../src/lab/index.js';
import { nsupdate } from '../support/nsupdate.js';
import { tieSockets } from '../support/relay.js';

const UA = 'remove-races-tests/1.0 tests@example.test';

/**
 * A TCP relay in front of Redis. Once armed with a marker, the first request from a client
 * that contains it makes the relay hold every reply to that client (the request itself goes
 * through: Redis runs it, its answer does not come back) until release(): a Redis that hangs.
 */
class HangingRedisRelay {
  private marker: Buffer | undefined;
  private holding = false;
  private readonly held: Array<{ client: net.Socket; data: Buffer }> = [];
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;

  constructor(private readonly upstreamPort: number) {
    this.server = net.createServer((client) => {
      const upstream = net.connect({ host: '127.0.0.1', port: this.upstreamPort });
      tieSockets(client, upstream, this.sockets);
      client.on('data', (d: Buffer) => {
        upstream.write(d);
        if (this.marker && d.includes(this.marker)) {
          this.marker = undefined;
          this.holding = true;
        }
      });
      upstream.on('data', (d: Buffer) => {
        if (this.holding) this.held.push({ client, data: d });
        else client.write(d);
      });
    });
  }

  /** Hold the replies from the first request that carries `marker` on. */
  arm(marker: string): void {
    this.marker = Buffer.from(marker);
  }

  get isHolding(): boolean {
    return this.holding;
  }

  /** Deliver what was held, in order, and stop holding. */
  release(): void {
    this.holding = false;
    this.marker = undefined;
    for (const { client, data } of this.held.splice(0)) if (!client.destroyed) client.write(data);
  }

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as net.AddressInfo).port;
  }

  close(): void {
    this.release();
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }
}

/** Redis's own clock in ms (the leases are in its time). */
async function redisNow(r: Redis): Promise<number> {
  const [s, us] = await r.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('host remove takes over the lease of an update stalled past it (knot, a Redis that hangs)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let relay: HangingRedisRelay;
  let redis: Redis;
  const auth: [string, string] = ['rita', 'rita-pw-123456'];

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    // dns.timeout 1 s: a lease of 3 s. The serve's Redis commands may wait long (the hang is
    // the relay's, not a timeout's).
    env = await BridgeEnv.start({
      kind: 'knot',
      serves: 0,
      config: { dns: { timeout: 1 }, frequency: { minInterval: 0.001 } },
    });
    relay = new HangingRedisRelay(Number(new URL(env.redis.url).port));
    const relayPort = await relay.listen();
    // Only serve goes through the relay; env.cliDirect (env.config) talks to Redis directly.
    await env.writeConfig({ redis: { url: env.redis.url.replace(/:\d+\//, `:${relayPort}/`), commandTimeout: 30 } });
    await env.startServe();
    redis = new Redis(env.redis.url);
    await env.addAccount(...auth);
  });
  after(async () => {
    redis?.disconnect();
    relay?.close();
    await env?.stop();
  });

  it('the stalled update is answered nohost, not good; DNS holds no A for the removed host', async () => {
    const h = `stall.${ZONE}`;
    const key = `ddns:h:${h}`;
    await env.addHost(h, auth[0]);
    const up = (ip: string) => env.get(`/nic/update?hostname=${h}&myip=${ip}`, { auth, ua: UA });
    expect((await up('192.0.2.1')).body).to.equal('good 192.0.2.1\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.1']);

    // The next update takes the host's lease, and from then on Redis's answers to serve hang.
    relay.arm(key);
    const pending = up('192.0.2.2');
    let lease: string | null = null;
    for (let i = 0; i < 100 && lease === null; i++) {
      lease = relay.isHolding ? await redis.hget(key, 'lk') : null;
      if (lease === null) await sleep(100);
    }
    expect(lease, 'the stalled update holds the lease').to.be.a('string');

    // Waits for that lease to run out, takes it over, deletes the records and the host.
    const removed = await env.cliDirect(['host', 'remove', h]);
    expect(removed.code, removed.stderr).to.equal(0);
    expect(removed.stdout).to.include(`host ${h} removed`);
    expect(await redis.exists(key), 'the host is gone from Redis').to.equal(0);

    // Redis answers serve again: the stalled update publishes, then finds the host gone.
    relay.release();
    const reply = await pending;
    expect(reply.raw.toString(), 'the stalled update').to.equal(expectedReply(200, 'OK', 'nohost\n'));
    expect(await env.ns.query(h, 'A'), 'no A left for the removed host').to.deep.equal([]);
    expect(await redis.exists(key), 'the host stays removed').to.equal(0);
  });
});

describe('host remove whose DNS delete fails on a host with a repair due (knot, primary down)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let redis: Redis;
  let keyFile: string;
  const auth: [string, string] = ['remy', 'remy-pw-123456'];

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig', 'nsupdate']);
    // dns.timeout 1 s: a lease of 3 s.
    env = await BridgeEnv.start({ kind: 'knot', config: { dns: { timeout: 1 }, frequency: { minInterval: 0.001 } } });
    redis = new Redis(env.redis.url);
    keyFile = await writeKeyFile(path.join(env.dir, 'client.key'), env.ns.key);
    await env.addAccount(...auth);
  });
  after(async () => {
    redis?.disconnect();
    await env?.stop();
  });

  /** An UPDATE straight to the primary (as a frontend that died before recording it would have sent). */
  async function sendUpdate(script: string): Promise<void> {
    const r = await nsupdate(keyFile, script);
    if (r.code !== 0) throw new Error(`nsupdate: ${r.output}`);
  }

  it('the repair stays due (lease and pending entry kept); with the primary back the reconciler republishes the recorded address', async () => {
    const h = `rep.${ZONE}`;
    const key = `ddns:h:${h}`;
    await env.addHost(h, auth[0]);
    expect((await env.get(`/nic/update?hostname=${h}&myip=192.0.2.1`, { auth, ua: UA })).body).to.equal(
      'good 192.0.2.1\n',
    );
    await env.stopServes(); // no reconciler for now

    // A frontend published 192.0.2.99 and died before recording it; its lease has expired: a repair is due.
    await sendUpdate(
      `server 127.0.0.1 ${env.ns.port}\nzone ${ZONE}\nupdate delete ${h} A\nupdate add ${h} 60 A 192.0.2.99\nsend\n`,
    );
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.99']);
    const now = await redisNow(redis);
    await redis.hset(key, 'lk', 'died-frontend', 'lu', String(now - 1));
    await redis.zadd('ddns:pending', now - 1, key);
    expect((await env.hostJson(h)).repair, 'host show: a repair is due').to.be.an('object');

    // The primary is down: the deletes are refused outright (nothing sent), the host stays.
    await env.ns.stop();
    let removed;
    try {
      removed = await env.cli(['host', 'remove', h]);
    } finally {
      await env.ns.start();
    }
    expect(removed.code, 'host remove fails').to.not.equal(0);
    expect(await redis.hget(key, '4'), 'the host stays, with its recorded address').to.equal('192.0.2.1');
    expect(await redis.hget(key, 'lk'), 'the lease token stays (the repair is due)')
      .to.be.a('string')
      .and.not.equal('');
    expect(await redis.zscore('ddns:pending', key), 'the host stays in the pending set').to.not.equal(null);
    expect(await env.ns.query(h, 'A'), 'DNS still holds the unrecorded address').to.deep.equal(['192.0.2.99']);

    // With the primary back, a serve's reconciler republishes the recorded state.
    await env.startServe();
    let dns: string[] = [];
    for (let i = 0; i < 75; i++) {
      dns = await env.ns.query(h, 'A');
      if (dns.length === 1 && dns[0] === '192.0.2.1') break;
      await sleep(200);
    }
    expect(dns, 'DNS holds the recorded address').to.deep.equal(['192.0.2.1']);
    expect(await redis.hget(key, '4')).to.equal('192.0.2.1');
  });
});
