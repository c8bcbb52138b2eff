/**
 * Admissions and commits issued in one turn of the event loop go to Redis as one script call
 * (src/store/batch.ts), against a real redis-server: each caller gets exactly the reply the
 * script alone would give it, in order, and what a batch writes is what the calls one after
 * another would write.
 */
import { expect } from 'chai';
import type { Admission, AdmitRequest, Expectations } from '../../src/app/ports.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { TargetState } from '../../src/core/types.js';
import { Redis } from 'ioredis';
import { makeTempDir, removeDir } from '../../src/lab/index.js';
import { startReplica } from '../../src/lab/sentinel.js';
import { batchLua, MAX_BATCH_ITEMS, ScriptBatcher } from '../../src/store/batch.js';
import { abandonerOf, LeaseAbandoner } from '../../src/store/abandon.js';
import { ADMIT } from '../../src/store/scripts/lease.js';
import type { StoreConfig } from '../../src/store/index.js';
import { storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 'b:';
const storeConfig = (url: string): StoreConfig => storeTestConfig(url, { keyPrefix: PREFIX });

const WANT: Expectations = { state: 'active', ipv4: '203.0.113.7', wildcard: '0', mx: '', backmx: '0' };
const TARGET: TargetState = {
  ipv4: '203.0.113.7',
  ipv6: null,
  wildcard: false,
  mx: null,
  backmx: false,
  offline: false,
};

const request = (fqdn: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({
  fqdn,
  account: 'alice',
  minIntervalMs: 60_000,
  maxFrequent: 3,
  expect: WANT,
  leaseMs: 5000,
  ...over,
});

const hostName = (i: number) => `h${i}.dyn.example.org`;

describe('store: scripts batched per turn of the event loop (real redis-server)', function () {
  const lab = useRedisStore('store-batch', storeConfig);

  /** EVAL / EVALSHA calls Redis counted (INFO commandstats). */
  async function scriptCalls(): Promise<number> {
    const info = await lab.raw.info('commandstats');
    let calls = 0;
    for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(m[1]);
    return calls;
  }

  /**
   * A script on a connection of its own holds the whole server for `ms` (Redis answers nobody meanwhile); resolves,
   * once it runs, with the promise of its end (`over`).
   */
  async function stallRedis(ms: number): Promise<{ over: Promise<void> }> {
    const stalled = lab.raw.duplicate();
    // Connected first, so the script goes out at once rather than after a connect (the slow part
    // on a loaded machine); Redis then runs it as it reads it.
    await stalled.ping();
    const busy = stalled
      .eval(
        "local t = redis.call('TIME'); local stop = t[1] * 1000000 + t[2] + tonumber(ARGV[1]) * 1000; " +
          "while true do local n = redis.call('TIME'); if n[1] * 1000000 + n[2] > stop then break end end; return 1",
        0,
        ms,
      )
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => stalled.disconnect());
    await new Promise((r) => setTimeout(r, 100)); // read and running by now
    return { over: busy };
  }

  /**
   * Run `call` (a store script call) and drop the store's connection while the call is in Redis's hands, not run
   * (scripts wait while writes are paused). Resolves with what the call threw.
   */
  async function cutInRedis(call: () => Promise<unknown>): Promise<unknown> {
    const id = await lab.store.redis.client('ID');
    await lab.raw.client('PAUSE', 10_000, 'WRITE');
    try {
      const result = call().catch((err: unknown) => err);
      for (const started = Date.now(); !/cmd=evalsha|cmd=eval /.test(String(await lab.raw.client('LIST', 'ID', id)));) {
        expect(Date.now() - started, 'the call reached Redis').to.be.below(5000);
        await new Promise((r) => setTimeout(r, 20));
      }
      await lab.raw.client('KILL', 'ID', String(id));
      return await result;
    } finally {
      await lab.raw.client('UNPAUSE');
    }
  }

  beforeEach(async () => {
    await lab.raw.flushdb();
    await lab.store.accounts.create({ name: 'alice', passwordHash: '$scrypt$x', donator: false, createdAt: 1 });
    for (let i = 0; i < 10; i++) await lab.store.hosts.add(hostName(i), 'alice', 'dynamic');
    await lab.store.hosts.add('bob.dyn.example.org', 'alice', 'static');
  });

  it('10 admissions of one turn: one script call; each gets its own reply; 10 commits of one turn: one call', async () => {
    const before = await scriptCalls();
    const admissions = await Promise.all(
      Array.from({ length: 10 }, (_, i) => lab.store.hosts.admit(request(hostName(i)))),
    );
    // One call for the ten (not ten), and nothing else.
    expect((await scriptCalls()) - before).to.equal(1);
    expect(admissions.map((a) => a.kind)).to.deep.equal(Array(10).fill('change'));
    const leases = admissions.map((a) => (a as Extract<Admission, { kind: 'change' }>).lease);
    expect(new Set(leases.map((l) => l.token)).size).to.equal(10);
    expect(leases.map((l) => l.fqdn)).to.deep.equal(Array.from({ length: 10 }, (_, i) => hostName(i)));
    // Each host holds its own lease, and the pending set all ten.
    for (const lease of leases) expect(await lab.raw.hget(`${PREFIX}h:${lease.fqdn}`, 'lk')).to.equal(lease.token);
    expect(await lab.raw.zcard(`${PREFIX}pending`)).to.equal(10);

    const mid = await scriptCalls();
    const commits = await Promise.all(leases.map((lease) => lab.store.hosts.commit(lease, TARGET)));
    expect((await scriptCalls()) - mid).to.equal(1);
    expect(commits).to.deep.equal(Array(10).fill('committed'));
    for (let i = 0; i < 10; i++) {
      const fields = await lab.raw.hgetall(`${PREFIX}h:${hostName(i)}`);
      expect(fields, hostName(i)).to.include({ '4': '203.0.113.7', s: 'active' });
      expect(fields.lk, hostName(i)).to.equal(undefined);
    }
    expect(await lab.raw.zcard(`${PREFIX}pending`)).to.equal(0);
    // And now every one is nochg, again in one call.
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => lab.store.hosts.admit(request(hostName(i)))));
    expect(again.map((a) => a.kind)).to.deep.equal(Array(10).fill('nochg'));
  });

  it('items of one call run in order, as one after another: the same host twice is change, then busy', async () => {
    const [first, second] = await Promise.all([
      lab.store.hosts.admit(request(hostName(0))),
      lab.store.hosts.admit(request(hostName(0))),
    ]);
    expect(first.kind).to.equal('change');
    expect(second.kind).to.equal('busy');
  });

  it('refusals and rejections stay per item: a static host, an unknown one and another account beside a change', async () => {
    const replies = await Promise.all([
      lab.store.hosts.admit(request('bob.dyn.example.org')),
      lab.store.hosts.admit(request('nobody.dyn.example.org')),
      lab.store.hosts.admit(request(hostName(1), { account: 'mallory' })),
      lab.store.hosts.admit(request(hostName(2))),
    ]);
    expect(replies).to.deep.include.members([
      { kind: 'rejected', outcome: 'not-dynamic' },
      { kind: 'rejected', outcome: 'unknown-host' },
      { kind: 'rejected', outcome: 'not-owner' },
    ]);
    expect(replies[3].kind).to.equal('change');
    // Nothing was written for the refused ones.
    expect(await lab.raw.hget(`${PREFIX}h:${hostName(1)}`, 'fl')).to.equal(null);
  });

  it(`more than ${MAX_BATCH_ITEMS} in one turn: split into calls of at most ${MAX_BATCH_ITEMS}`, async () => {
    const count = MAX_BATCH_ITEMS + 6;
    const before = await scriptCalls();
    const replies = await Promise.all(
      Array.from({ length: count }, () => lab.store.hosts.admit(request('nobody.dyn.example.org'))),
    );
    expect((await scriptCalls()) - before).to.equal(2);
    expect(replies.every((r) => r.kind === 'rejected')).to.equal(true);
  });

  it('after SCRIPT FLUSH (Redis lost its scripts) a batch loads its script again and is answered', async () => {
    await Promise.all([0, 1].map((i) => lab.store.hosts.admit(request(hostName(i)))));
    await lab.raw.script('FLUSH');
    const replies = await Promise.all([2, 3].map((i) => lab.store.hosts.admit(request(hostName(i)))));
    expect(replies.map((r) => r.kind)).to.deep.equal(['change', 'change']);
  });

  it('an item whose script raises an error fails alone (StoreUnavailableError); the others get their replies', async () => {
    // The host hash is a string: HGETALL fails (WRONGTYPE) inside the batch, for that item only.
    await lab.raw.set(`${PREFIX}h:broken.dyn.example.org`, 'x');
    const before = await scriptCalls();
    const [good, broken, after] = await Promise.allSettled([
      lab.store.hosts.admit(request(hostName(0))),
      lab.store.hosts.admit(request('broken.dyn.example.org')),
      lab.store.hosts.admit(request(hostName(1))),
    ]);
    // The broken item's lease is abandoned (abandon.ts): one more script call, on the store's connection. A PING
    // behind it there is answered once it ran, so the count is the same whichever connection Redis reads first.
    const abandoner = abandonerOf(lab.store.redis);
    while (abandoner.pending > 0) await new Promise((r) => setImmediate(r));
    await lab.store.redis.ping();
    expect((await scriptCalls()) - before, 'one call for the three admissions, one abandon').to.equal(2);
    expect(broken.status).to.equal('rejected');
    const reason = (broken as PromiseRejectedResult).reason as Error;
    expect(reason).to.be.instanceOf(StoreUnavailableError);
    expect(reason.message).to.match(/^redis: admit failed: .*WRONGTYPE/);
    for (const [r, i] of [
      [good, 0],
      [after, 1],
    ] as const) {
      expect(r.status).to.equal('fulfilled');
      const lease = ((r as PromiseFulfilledResult<Admission>).value as Extract<Admission, { kind: 'change' }>).lease;
      expect(await lab.raw.hget(`${PREFIX}h:${hostName(i)}`, 'lk')).to.equal(lease.token);
    }
  });

  it('a call that gets no answer fails every item of it; the next turn works', async () => {
    const stalled = lab.raw.duplicate();
    // A busy script holds the whole server for 2.5 s, past commandTimeoutMs (2 s): both items time out.
    const busy = stalled
      .eval(
        "local t = redis.call('TIME'); local stop = t[1] * 1000000 + t[2] + 2500000; " +
          "while true do local n = redis.call('TIME'); if n[1] * 1000000 + n[2] > stop then break end end; return 1",
        0,
      )
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    const results = await Promise.allSettled([0, 1].map((i) => lab.store.hosts.admit(request(hostName(i)))));
    for (const r of results) {
      expect(r.status).to.equal('rejected');
      expect((r as PromiseRejectedResult).reason).to.be.instanceOf(StoreUnavailableError);
    }
    await busy;
    stalled.disconnect();
    const next = await Promise.all([2, 3].map((i) => lab.store.hosts.admit(request(hostName(i)))));
    expect(next.map((a) => a.kind)).to.deep.equal(['change', 'change']);
  });

  it('admissions of one turn that all timed out: Redis runs them late, and one abandon call right behind ends their leases', async () => {
    const hosts = [0, 1, 2].map(hostName);
    const before = await scriptCalls();
    // Past commandTimeoutMs (2 s): the admissions and (sent right after their timeout) the abandon wait behind it.
    const stall = await stallRedis(2500);
    const results = await Promise.allSettled(hosts.map((h) => lab.store.hosts.admit(request(h))));
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    await stall.over;
    // Each host: the late admission took a lease (lk), and the abandon behind it has ended it (lu ≤ Redis's now).
    const ended = async () => {
      const [sec, micro] = await lab.raw.time();
      const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
      const leases = await Promise.all(hosts.map((h) => lab.raw.hmget(`${PREFIX}h:${h}`, 'lk', 'lu')));
      return leases.every(([lk, lu]) => lk !== null && Number(lu) <= now);
    };
    for (const started = Date.now(); !(await ended());) {
      // Well before the lease time (5 s): not by running out.
      expect(Date.now() - started, 'leases ended after the stall').to.be.below(1000);
      await new Promise((r) => setTimeout(r, 20));
    }
    // The busy script, the one batched admission, the one batched abandon: nothing else (no retry, no call per host).
    expect((await scriptCalls()) - before).to.equal(3);
    for (const h of hosts) expect(await lab.raw.hget(`${PREFIX}h:${h}`, 'lg'), `no mark on ${h}`).to.equal(null);
    // Due at once in the pending set, for the reconciler.
    const [sec] = await lab.raw.time();
    for (const h of hosts)
      expect(Number(await lab.raw.zscore(`${PREFIX}pending`, `${PREFIX}h:${h}`))).to.be.at.most(
        (Number(sec) + 1) * 1000,
      );
    // The next admissions take the hosts over (not busy) as a due repair: never nochg.
    const next = await Promise.all(hosts.map((h) => lab.store.hosts.admit(request(h))));
    expect(next.map((a) => a.kind)).to.deep.equal(['change', 'change', 'change']);
    expect(next.map((a) => (a as Extract<Admission, { kind: 'change' }>).repairDue)).to.deep.equal([true, true, true]);
  });

  it('an abandon that runs before its admission (another connection) marks the token: that lease ends as it is taken', async () => {
    const keys = (i: number) => ({ host: `${PREFIX}h:${hostName(i)}`, pending: `${PREFIX}pending` });
    const abandoner = new LeaseAbandoner(lab.raw);
    // Sent on a connection other than the admission's (here: none known), for a lease not held yet.
    abandoner.abandon({ ...keys(0), token: 'given-up' }, {}, true, new Error('Command timed out'));
    for (const started = Date.now(); (await lab.raw.hget(keys(0).host, 'lg')) === null;) {
      expect(Date.now() - started, 'the mark is written').to.be.below(5000);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await lab.raw.hget(keys(0).host, 'lg')).to.equal('given-up');
    // A failure that never reached a socket cannot run later: no abandon for it.
    abandoner.abandon({ ...keys(1), token: 'never-sent' }, {}, true, new Error("Stream isn't writeable"));
    expect(abandoner.pending).to.equal(0);

    // The stale admission arrives: it runs (counted), but the lease it takes has already ended and is due now.
    const batcher = new ScriptBatcher(lab.raw, ADMIT, 'admit');
    const late = await batcher.run(keys(0), { ...request(hostName(0)), leaseToken: 'given-up' });
    expect(late.kind).to.equal('change');
    const [sec, micro] = await lab.raw.time();
    const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    const [lk, lu] = await lab.raw.hmget(keys(0).host, 'lk', 'lu');
    expect(lk).to.equal('given-up');
    expect(Number(lu)).to.be.at.most(now);
    expect(Number(await lab.raw.zscore(keys(0).pending, keys(0).host))).to.be.at.most(now);
    // Another token is not marked: its lease lasts.
    const held = await batcher.run(keys(1), { ...request(hostName(1)), leaseToken: 'kept' });
    expect(held.kind).to.equal('change');
    expect(Number(await lab.raw.hget(keys(1).host, 'lu'))).to.be.above(now + 1000);
    // The next request takes the abandoned host over; its commit ends the lease and the mark with it.
    const next = await lab.store.hosts.admit(request(hostName(0)));
    expect(next.kind).to.equal('change');
    expect(await lab.store.hosts.commit((next as Extract<Admission, { kind: 'change' }>).lease, TARGET)).to.equal(
      'committed',
    );
    const fields = await lab.raw.hgetall(keys(0).host);
    expect(fields.lk).to.equal(undefined);
    expect(fields.lg).to.equal(undefined);
  });

  it('the connection lost with an admission in flight: the abandon goes out once the client is back, and marks the token', async () => {
    const key = `${PREFIX}h:${hostName(4)}`;
    expect(await cutInRedis(() => lab.store.hosts.admit(request(hostName(4))))).to.be.instanceOf(StoreUnavailableError);
    // Sent again on the new connection, where it cannot know whether the admission is still to come: a mark.
    for (const started = Date.now(); (await lab.raw.hget(key, 'lg')) === null;) {
      expect(Date.now() - started, 'the mark is written after the reconnect').to.be.below(5000);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await lab.raw.hget(key, 'lk'), 'the killed admission never ran').to.equal(null);
    // The host is free: the next request is admitted at once, and its commit clears the mark.
    const next = await lab.store.hosts.admit(request(hostName(4)));
    expect(next.kind).to.equal('change');
    const lease = (next as Extract<Admission, { kind: 'change' }>).lease;
    expect(await lab.store.hosts.commit(lease, TARGET)).to.equal('committed');
    expect(await lab.raw.hget(key, 'lg')).to.equal(null);
  });

  it('a commit that timed out runs late: it records the change and ends the lease; the abandon behind it changes nothing', async () => {
    const key = `${PREFIX}h:${hostName(5)}`;
    const admitted = await lab.store.hosts.admit(request(hostName(5)));
    const lease = (admitted as Extract<Admission, { kind: 'change' }>).lease;
    const stall = await stallRedis(2500);
    // Not acknowledged (the caller answers 911), though Redis records it once it runs.
    const committed = await lab.store.hosts.commit(lease, TARGET).catch((err: Error) => err);
    expect(committed).to.be.instanceOf(StoreUnavailableError);
    await stall.over;
    const fields = await lab.raw.hgetall(key);
    expect(fields['4']).to.equal('203.0.113.7');
    for (const f of ['lk', 'lu', 'lg']) expect(fields[f], f).to.equal(undefined);
    expect(await lab.raw.zscore(`${PREFIX}pending`, key)).to.equal(null);
    expect((await lab.store.hosts.admit(request(hostName(5)))).kind).to.equal('nochg');
  });

  it('a commit whose connection is lost before it ran: the lease ends once the client is back; the record is unchanged', async () => {
    const key = `${PREFIX}h:${hostName(6)}`;
    const admitted = await lab.store.hosts.admit(request(hostName(6)));
    const lease = (admitted as Extract<Admission, { kind: 'change' }>).lease;
    expect(await cutInRedis(() => lab.store.hosts.commit(lease, TARGET))).to.be.instanceOf(StoreUnavailableError);
    const ended = async () => {
      const [sec, micro] = await lab.raw.time();
      const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
      const [lk, lu] = await lab.raw.hmget(key, 'lk', 'lu');
      return lk === lease.token && Number(lu) <= now;
    };
    for (const started = Date.now(); !(await ended());) {
      expect(Date.now() - started, 'the lease ends after the reconnect, not at its end').to.be.below(2000);
      await new Promise((r) => setTimeout(r, 20));
    }
    // Nothing recorded (the change is not acknowledged), no mark (a commit takes no lease): due for the reconciler.
    const fields = await lab.raw.hgetall(key);
    expect(fields['4']).to.equal(undefined);
    expect(fields.lg).to.equal(undefined);
    expect(await lab.raw.zscore(`${PREFIX}pending`, key)).to.not.equal(null);
    const next = await lab.store.hosts.admit(request(hostName(6)));
    expect(next.kind).to.equal('change');
    expect((next as Extract<Admission, { kind: 'change' }>).repairDue).to.equal(true);
  });

  it('a demoted primary (READONLY) fails the whole call at the top, where the client sees it and can reconnect', async () => {
    const dir = await makeTempDir('store-batch-replica-');
    const replica = await startReplica({ dir, primary: lab.server });
    const seen: string[] = [];
    // reconnectOnError hears only errors at the top of a reply (an item's error inside the array is not).
    const client = new Redis(`redis://${replica.host}:${replica.port}`, {
      reconnectOnError: (err) => {
        seen.push(err.message);
        return false;
      },
    });
    try {
      await lab.raw.wait(1, 2000);
      const batcher = new ScriptBatcher(client, ADMIT, 'admit');
      const keys = (i: number) => ({ host: `${PREFIX}h:${hostName(i)}`, pending: `${PREFIX}pending` });
      const args = { ...request(hostName(0)), leaseToken: 'token' };
      const results = await Promise.allSettled([batcher.run(keys(0), args), batcher.run(keys(1), args)]);
      for (const r of results) {
        expect(r.status).to.equal('rejected');
        expect((r as PromiseRejectedResult).reason).to.be.instanceOf(StoreUnavailableError);
        expect(((r as PromiseRejectedResult).reason as Error).message).to.match(/READONLY/);
      }
      expect(
        seen.some((m) => m.startsWith('READONLY')),
        JSON.stringify(seen),
      ).to.equal(true);
    } finally {
      client.disconnect();
      await replica.stop();
      await removeDir(dir);
    }
  });

  it('the batch Lua binds KEYS and ARGV to each item: no other reference to them is left in the body', () => {
    const lua = batchLua('local x = KEYS[1]\n', "return {KEYS[2], ARGV[1], 'KEYSTONE'}\n");
    const body = lua.slice(lua.indexOf('local function one()'), lua.indexOf('\nend\n'));
    expect(body).to.not.match(/\bKEYS\b|\bARGV\b/);
    expect(lua).to.include("return {KB[2], AB[1], 'KEYSTONE'}");
  });
});
