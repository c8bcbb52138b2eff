/**
 * redis.waitReplicas on a real primary and replica (src/store/replica-wait.ts): concurrent
 * updates share one WAIT, a replica short fails them (911) in the WAIT's time, and the WAIT
 * never holds up the store's other connection (pings, reads).
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { NotReplicatedError, StoreUnavailableError } from '../../src/core/errors.js';
import {
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  startRedis,
  startReplica,
  type LabProcess,
  type RedisServer,
} from '../../src/lab/index.js';
import { ReplicaWaiter } from '../../src/store/replica-wait.js';
import { sleep } from '../support/bridge.js';

/** WAIT commands the server has run so far. */
async function waitCalls(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  const m = /cmdstat_wait:calls=(\d+)/.exec(stats);
  return m ? Number(m[1]) : 0;
}

describe('redis.waitReplicas: one WAIT for many updates, on a connection of its own', function () {
  this.timeout(60_000);
  let dir: string;
  let primary: RedisServer;
  let replica: LabProcess | undefined;
  let writes: Redis;
  let other: Redis;
  let admin: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('replica-wait-');
    primary = await startRedis({ dir });
    writes = new Redis(primary.url);
    other = new Redis(primary.url);
    admin = new Redis(primary.url);
  });

  after(async () => {
    for (const c of [writes, other, admin]) c?.disconnect();
    await replica?.stop();
    await primary?.stop();
    await removeDir(dir);
  });

  it('no replica: every waiting update fails with 911 after the WAIT time, all of them on one WAIT', async () => {
    const waiter = new ReplicaWaiter(writes, { replicas: 1, timeoutMs: 400 });
    const before = await waitCalls(admin);
    await Promise.all([...Array(20).keys()].map((i) => writes.set(`k${i}`, 'v')));
    const started = Date.now();
    const outcomes = await Promise.allSettled([...Array(20).keys()].map(() => waiter.replicated('commit')));
    const took = Date.now() - started;
    for (const o of outcomes) {
      expect(o.status).to.equal('rejected');
      const reason = (o as PromiseRejectedResult).reason as Error;
      expect(reason).to.be.instanceOf(NotReplicatedError);
      expect(reason.message).to.equal('redis: commit: 0 of 1 replicas acknowledged the write within 400 ms');
    }
    expect(took).to.be.within(350, 1500);
    expect((await waitCalls(admin)) - before).to.equal(1);
  });

  it('while a WAIT blocks its connection, the other connection answers at once', async () => {
    const waiter = new ReplicaWaiter(writes, { replicas: 1, timeoutMs: 1500 });
    await writes.set('blocked', 'v');
    const pending = waiter.replicated('commit').catch((err: Error) => err);
    await sleep(100);
    const started = Date.now();
    expect(await other.ping()).to.equal('PONG');
    expect(await other.get('blocked')).to.equal('v');
    expect(Date.now() - started).to.be.below(100);
    expect(await pending).to.be.instanceOf(StoreUnavailableError);
  });

  it('a replica: the updates resolve once it holds them; a write answered during a WAIT waits for the next', async () => {
    replica = await startReplica({ dir, primary: { host: primary.host, port: primary.port } });
    const probe = new Redis({ host: replica.host, port: replica.port });
    try {
      for (let i = 0; i < 100 && !/master_link_status:up/.test(await probe.info('replication')); i++) await sleep(100);
      const waiter = new ReplicaWaiter(writes, { replicas: 1, timeoutMs: 2000 });
      const before = await waitCalls(admin);
      const firstWave = await Promise.all(
        [...Array(30).keys()].map(async (i) => {
          await writes.set(`w${i}`, String(i));
          await waiter.replicated('commit');
          return probe.get(`w${i}`);
        }),
      );
      // Each resolved only once the replica held its write.
      expect(firstWave).to.deep.equal([...Array(30).keys()].map(String));
      const calls = (await waitCalls(admin)) - before;
      expect(calls).to.be.within(1, 3);
    } finally {
      probe.disconnect();
    }
  });
});
