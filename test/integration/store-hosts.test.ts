/** HostGate and HostAdmin against a real redis-server: admit / commit / release and the frequency rule. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { Admission, AdmitGuard, AdmitRequest, Expectations, GuardCheck } from '../../src/app/ports.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/core/errors.js';
import type { TargetState } from '../../src/core/types.js';
import { createRedis, storeOn, type Store, type StoreConfig } from '../../src/store/index.js';
import { RecordingLogger, storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 't:';

function storeConfig(url: string): StoreConfig {
  return storeTestConfig(url, { keyPrefix: PREFIX });
}

const HOST = 'home.dyn.example.org';
const WANT: Expectations = { state: 'active', ipv4: '203.0.113.7', wildcard: '0', mx: '', backmx: '0' };

function request(over: Partial<AdmitRequest> = {}): AdmitRequest {
  return {
    fqdn: HOST,
    account: 'alice',
    minIntervalMs: 60_000,
    maxFrequent: 3,
    expect: WANT,
    leaseMs: 5000,
    ...over,
  };
}

const TARGET: TargetState = {
  ipv4: '203.0.113.7',
  ipv6: null,
  wildcard: false,
  mx: null,
  backmx: false,
  offline: false,
};

describe('store: hosts (real redis-server)', function () {
  const logger = new RecordingLogger();
  const lab = useRedisStore('store-hosts', storeConfig, { logger });

  beforeEach(async () => {
    await lab.raw.flushdb();
    logger.lines.length = 0;
    await lab.store.accounts.create({ name: 'alice', passwordHash: '$scrypt$x', donator: false, createdAt: 1 });
    await lab.store.accounts.create({ name: 'bob', passwordHash: '$scrypt$y', donator: false, createdAt: 2 });
    await lab.store.hosts.add(HOST, 'alice', 'dynamic');
  });

  const hostKey = PREFIX + 'h:' + HOST;

  describe("a host linked while its parent's prefix change is in flight", () => {
    const PREFIX_TEXT = '2001:db8:1200:3400::/56';
    const prefixRequest = () => request({ expect: { ...WANT, prefix: PREFIX_TEXT, linksChanged: '' } });
    const marks = () => lab.raw.hmget(hostKey, 'pd', 'px');

    it('keeps the "links changed" mark: the next update with the same prefix is a change, not nochg', async () => {
      const child = 'nas.dyn.example.org';
      await lab.store.hosts.add(child, 'alice', 'dynamic');
      const admission = await lab.store.hosts.admit(prefixRequest());
      if (admission.kind !== 'change') throw new Error(`expected a change, got ${admission.kind}`);
      // The link lands after the parent's followers were read and before its commit.
      await lab.store.links.link(child, HOST, '::1234', 40);
      expect(await lab.store.hosts.commit(admission.lease, TARGET, { prefix: PREFIX_TEXT })).to.equal('committed');
      const [pd, px] = await marks();
      expect(px).to.equal(PREFIX_TEXT);
      expect(pd, 'the mark of the link made meanwhile').to.equal('1');
      const again = await lab.store.hosts.admit(prefixRequest());
      expect(again.kind).to.equal('change');
      if (again.kind !== 'change') return;
      // That change publishes the new follower: the mark it saw goes with its commit.
      expect(await lab.store.hosts.commit(again.lease, TARGET, { prefix: PREFIX_TEXT })).to.equal('committed');
      expect((await marks())[0]).to.equal(null);
      expect((await lab.store.hosts.admit(prefixRequest())).kind).to.equal('nochg');
    });
  });

  const redisNow = async (): Promise<number> => {
    const [s, us] = await lab.raw.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };

  /** Take over the host's expired lease as the reconciler does. */
  const reclaimed = async () => {
    const r = await lab.store.hosts.reclaim(HOST, 5000);
    if (!r) throw new Error('nothing to reclaim');
    return r;
  };

  describe('admit outcomes', () => {
    it('nohost for a name that is not registered', async () => {
      expect(await lab.store.hosts.admit(request({ fqdn: 'other.dyn.example.org' }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'unknown-host',
      });
    });

    it("notyours for another account's host, without counting", async () => {
      expect(await lab.store.hosts.admit(request({ account: 'bob' }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'not-owner',
      });
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc', 'fs')).to.deep.equal([null, null, null]);
    });

    it('badsys for a host that is not dynamic', async () => {
      await lab.store.hosts.add('static.dyn.example.org', 'alice', 'static');
      expect(await lab.store.hosts.admit(request({ fqdn: 'static.dyn.example.org' }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'not-dynamic',
      });
    });

    it('closed and abuse for closed and blocked hosts', async () => {
      await lab.store.hosts.setState(HOST, 'closed');
      expect(await lab.store.hosts.admit(request())).to.deep.equal({ kind: 'rejected', outcome: 'closed' });
      await lab.store.hosts.setState(HOST, 'blocked');
      expect(await lab.store.hosts.admit(request())).to.deep.equal({ kind: 'rejected', outcome: 'abuse' });
    });

    it('change with a lease when something differs; busy while the lease is held', async () => {
      const a = await lab.store.hosts.admit(request());
      expect(a.kind).to.equal('change');
      if (a.kind !== 'change') return;
      expect(a.host).to.deep.include({
        fqdn: HOST,
        account: 'alice',
        type: 'dynamic',
        state: 'active',
        ipv4: null,
        updatedAt: 0,
      });
      expect(a.lease.fqdn).to.equal(HOST);
      expect(await lab.raw.hget(hostKey, 'lk')).to.equal(a.lease.token);
      const lu = Number(await lab.raw.hget(hostKey, 'lu'));
      expect(lu - (await redisNow())).to.be.within(4000, 5000);
      const fsBefore = await lab.raw.hget(hostKey, 'fs');
      expect(await lab.store.hosts.admit(request())).to.deep.equal({ kind: 'busy' });
      expect(await lab.store.hosts.admit(request({ expect: null }))).to.deep.equal({ kind: 'busy' });
      expect(await lab.raw.hget(hostKey, 'fs')).to.equal(fsBefore); // busy counts nothing
    });

    it('an expired lease is taken over', async () => {
      const first = await lab.store.hosts.admit(request({ leaseMs: 50 }));
      expect(first.kind).to.equal('change');
      await new Promise((r) => setTimeout(r, 80));
      const second = await lab.store.hosts.admit(request());
      expect(second.kind).to.equal('change');
      if (first.kind === 'change' && second.kind === 'change') {
        expect(second.lease.token).to.not.equal(first.lease.token);
        expect(await lab.raw.hget(hostKey, 'lk')).to.equal(second.lease.token);
        // Only the second took over a lease that had expired: a repair was due.
        expect([first.repairDue, second.repairDue]).to.deep.equal([false, true]);
      }
    });

    it('nochg when every expectation holds (absent fields read as empty / 0)', async () => {
      await lab.raw.hset(hostKey, '4', '203.0.113.7');
      const a = await lab.store.hosts.admit(request());
      expect(a.kind).to.equal('nochg');
      expect(a).to.deep.equal({ kind: 'nochg' });
      expect(await lab.raw.hexists(hostKey, 'lk')).to.equal(0);
      // A stored '0' flag equals an expected '0' as well.
      await lab.raw.hset(hostKey, 'w', '0');
      expect((await lab.store.hosts.admit(request({ minIntervalMs: 0 }))).kind).to.equal('nochg');
      // One differing field → change.
      expect(
        (await lab.store.hosts.admit(request({ minIntervalMs: 0, expect: { ...WANT, wildcard: '1' } }))).kind,
      ).to.equal('change');
    });

    it('expect null only counts, answering nochg', async () => {
      const a = await lab.store.hosts.admit(request({ expect: null }));
      expect(a.kind).to.equal('nochg');
      expect(await lab.raw.hmget(hostKey, 'fc', 'fs')).to.deep.equal(['0', '1']);
      expect(await lab.raw.hexists(hostKey, 'lk')).to.equal(0);
    });

    it('offline state is compared like any other field', async () => {
      await lab.raw.hset(hostKey, 's', 'offline', 'w', '1');
      const a = await lab.store.hosts.admit(request({ expect: { state: 'offline' } }));
      expect(a.kind).to.equal('nochg');
      expect(a).to.deep.equal({ kind: 'nochg' });
      expect((await lab.store.hosts.admit(request({ minIntervalMs: 0 }))).kind).to.equal('change');
    });

    it('rejects an unknown expectation name', async () => {
      let error: unknown;
      try {
        await lab.store.hosts.admit(request({ expect: { colour: 'blue' } }));
      } catch (err) {
        error = err;
      }
      expect(String(error)).to.match(/unknown host expectation 'colour'/);
    });
  });

  describe('frequency rule', () => {
    it('serves three frequent requests in a row and blocks on the fourth', async () => {
      const kinds: string[] = [];
      for (let i = 0; i < 4; i++) {
        // The first request ever is not frequent: fc 0, then 1, 2, 3.
        kinds.push((await lab.store.hosts.admit(request({ expect: null }))).kind);
        expect(await lab.raw.hget(hostKey, 'fc')).to.equal(String(i));
      }
      expect(kinds).to.deep.equal(['nochg', 'nochg', 'nochg', 'nochg']);
      expect(await lab.store.hosts.admit(request({ expect: null }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'abuse',
      });
      expect(await lab.raw.hget(hostKey, 's')).to.equal('blocked');
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('4');
      expect((await lab.store.hosts.get(HOST))!.state).to.equal('blocked');
      // Blocked until an operator unblocks; then the rule starts afresh.
      expect(await lab.store.hosts.admit(request())).to.deep.equal({ kind: 'rejected', outcome: 'abuse' });
      await lab.store.hosts.setState(HOST, 'active');
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc')).to.deep.equal([null, null]);
      expect((await lab.store.hosts.admit(request())).kind).to.equal('change');
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('0');
    });

    it('a request past the minimum interval resets the run', async () => {
      const now = await redisNow();
      await lab.raw.hset(hostKey, 'fl', String(now - 1000), 'fc', '3');
      expect((await lab.store.hosts.admit(request({ expect: null, minIntervalMs: 900 }))).kind).to.equal('nochg');
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('0');
    });

    it('uses the interval it is given (donators: shorter)', async () => {
      const now = await redisNow();
      await lab.raw.hset(hostKey, 'fl', String(now - 20_000), 'fc', '3');
      // 20 s after the last request: frequent for a 60 s interval → blocks (fc 4 > 3) ...
      expect(await lab.store.hosts.admit(request({ expect: null, minIntervalMs: 60_000 }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'abuse',
      });
      await lab.store.hosts.setState(HOST, 'active');
      await lab.raw.hset(hostKey, 'fl', String(now - 20_000), 'fc', '3');
      // ... but not for a donator's 15 s interval.
      expect((await lab.store.hosts.admit(request({ expect: null, minIntervalMs: 15_000 }))).kind).to.equal('nochg');
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('0');
    });

    it('nochg and change both count', async () => {
      await lab.store.hosts.admit(request({ expect: null }));
      const a = await lab.store.hosts.admit(request());
      expect(a.kind).to.equal('change');
      expect(await lab.raw.hmget(hostKey, 'fc', 'fs')).to.deep.equal(['1', '2']);
    });
  });

  describe('commit and release', () => {
    it('commit writes the published state, stamps u and drops the lease', async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      const before = await redisNow();
      await lab.store.hosts.commit(a.lease, {
        ipv4: '203.0.113.7',
        ipv6: '2001:db8::7',
        wildcard: true,
        mx: 'mx.example.net',
        backmx: true,
        offline: false,
      });
      const fields = await lab.raw.hgetall(hostKey);
      expect(fields).to.include({
        o: 'alice',
        t: 'dynamic',
        s: 'active',
        4: '203.0.113.7',
        6: '2001:db8::7',
        w: '1',
        m: 'mx.example.net',
        b: '1',
      });
      expect(fields).to.not.have.property('lk');
      expect(fields).to.not.have.property('lu');
      expect(Number(fields.u)).to.be.within(before - 5, before + 1000);
      const host = await lab.store.hosts.get(HOST);
      expect(host).to.deep.include({
        ipv4: '203.0.113.7',
        ipv6: '2001:db8::7',
        wildcard: true,
        mx: 'mx.example.net',
        backmx: true,
        state: 'active',
      });
      // The same request again is nochg now.
      const again = await lab.store.hosts.admit(
        request({
          minIntervalMs: 0,
          expect: {
            state: 'active',
            ipv4: '203.0.113.7',
            ipv6: '2001:db8::7',
            wildcard: '1',
            mx: 'mx.example.net',
            backmx: '1',
          },
        }),
      );
      expect(again.kind).to.equal('nochg');
    });

    it('commit of an offline target removes the addresses and sets state offline; null fields are deleted', async () => {
      await lab.raw.hset(hostKey, '4', '198.51.100.1', '6', '2001:db8::1', 'w', '1', 'm', 'mx.example.net');
      const a = await lab.store.hosts.admit(request({ expect: { state: 'offline' } }));
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.store.hosts.commit(a.lease, {
        ipv4: null,
        ipv6: null,
        wildcard: true,
        mx: 'mx.example.net',
        backmx: false,
        offline: true,
      });
      const fields = await lab.raw.hgetall(hostKey);
      expect(fields).to.include({ s: 'offline', w: '1', m: 'mx.example.net' });
      for (const gone of ['4', '6', 'b', 'lk', 'lu']) expect(fields).to.not.have.property(gone);
      // Coming back: state active again.
      const b = await lab.store.hosts.admit(request({ minIntervalMs: 0 }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.commit(b.lease, TARGET);
      expect(await lab.raw.hmget(hostKey, 's', '4', 'w', 'm')).to.deep.equal(['active', '203.0.113.7', null, null]);
    });

    it("release drops the lease and undoes exactly this request's count", async () => {
      // Nothing before: release must leave fl/fc absent again.
      const first = await lab.store.hosts.admit(request());
      if (first.kind !== 'change') throw new Error(`expected change, got ${first.kind}`);
      await lab.store.hosts.release(first.lease);
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc', 'lk', 'lu')).to.deep.equal([null, null, null, null]);

      // With history: fl/fc go back to their previous values.
      const now = await redisNow();
      await lab.raw.hset(hostKey, 'fl', String(now - 5000), 'fc', '2');
      const second = await lab.store.hosts.admit(request());
      if (second.kind !== 'change') throw new Error(`expected change, got ${second.kind}`);
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('3');
      await lab.store.hosts.release(second.lease);
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc', 'lk')).to.deep.equal([String(now - 5000), '2', null]);
    });

    it('release with republishInMs (the UPDATE may still be applied): counts undone, the lease left expired and due; never nochg until republished', async () => {
      const pending = PREFIX + 'pending';
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      const before = await redisNow();
      await lab.store.hosts.release(a.lease, { republishInMs: 0 });
      const [fl, fc, lk, lu] = await lab.raw.hmget(hostKey, 'fl', 'fc', 'lk', 'lu');
      expect([fl, fc]).to.deep.equal([null, null]);
      expect(lk, 'the lease token stays').to.equal(a.lease.token);
      expect(Number(lu)).to.be.within(before, (await redisNow()) + 1);
      expect(Number(await lab.raw.zscore(pending, hostKey))).to.be.within(before, Date.now() + 5);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([HOST]);

      // The reconciler takes the expired lease and records what it published: then nochg again.
      await lab.store.hosts.commit((await reclaimed()).lease, TARGET);
      const again = await lab.store.hosts.admit(request({ minIntervalMs: 0 }));
      expect(again.kind, 'after the republish it is nochg').to.equal('nochg');

      const b = await lab.store.hosts.admit(request({ minIntervalMs: 0, expect: { ...WANT, ipv4: '203.0.113.8' } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.release(b.lease, { republishInMs: 0 });
      const c = await lab.store.hosts.admit(request({ minIntervalMs: 0 }));
      expect(c.kind, 'an expired lease is never nochg').to.equal('change');
    });

    describe('the address families a change writes, kept with its lease (the lease record)', () => {
      const V6: Expectations = { state: 'active', ipv6: '2001:db8::7', wildcard: '0', mx: '', backmx: '0' };
      const BOTH = { ipv4: true, ipv6: true };
      /** The lease record (lf, lt, lr) written as `<families>[r]:<token>`, or null without one. */
      const leaseRecord = async (): Promise<string | null> => {
        const [families, token, late] = await lab.raw.hmget(hostKey, 'lf', 'lt', 'lr');
        return token === null ? null : `${families ?? ''}${late === '1' ? 'r' : ''}:${token}`;
      };
      /** Set the lease record from that form (new fields; `legacy`: as versions before wrote it, in 'la'). */
      const setLeaseRecord = async (text: string, legacy = false): Promise<void> => {
        await lab.raw.hdel(hostKey, 'lf', 'lt', 'lr', 'la');
        if (legacy) return void (await lab.raw.hset(hostKey, 'la', text));
        const [, families, late, token] = /^([46]*)(r?):(.*)$/.exec(text)!;
        await lab.raw.hset(hostKey, 'lf', families!, 'lt', token!, ...(late ? ['lr', '1'] : []));
      };
      const change = async (over: Partial<AdmitRequest> = {}) => {
        const a = await lab.store.hosts.admit(request({ minIntervalMs: 0, ...over }));
        if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
        return a;
      };

      it('a change writes the families it names; commit and a plain release drop the record', async () => {
        const a = await change();
        expect(a.families).to.deep.equal({ ipv4: true, ipv6: false });
        expect(await leaseRecord(), 'tied to its lease').to.equal(`4:${a.lease.token}`);
        for (const f of ['lf', 'lt', 'lr', 'la']) expect(a.host, 'not part of the host record').to.not.have.property(f);
        await lab.store.hosts.commit(a.lease, TARGET);
        expect(await leaseRecord()).to.equal(null);
        const b = await change({ expect: V6 });
        expect(b.families).to.deep.equal({ ipv4: false, ipv6: true });
        await lab.store.hosts.release(b.lease);
        expect(await leaseRecord()).to.equal(null);
        const c = await change({ expect: { state: 'offline' } });
        expect(c.families, 'going offline removes both').to.deep.equal(BOTH);
      });

      it('an interrupted change: the repair and a request taking it over write what it wrote, and no more', async () => {
        const a = await change();
        await lab.store.hosts.release(a.lease, { republishInMs: 0 });
        expect(await leaseRecord(), 'kept while the repair is due').to.equal(`4:${a.lease.token}`);
        const r = await reclaimed();
        expect(r.families).to.deep.equal({ ipv4: true, ipv6: false });
        await lab.store.hosts.release(r.lease, { republishInMs: 0, failedRepublish: true });
        // A request for the other family takes the due repair over: it writes both.
        const b = await change({ expect: V6 });
        expect([b.repairDue, b.families]).to.deep.equal([true, BOTH]);
        expect(await leaseRecord()).to.equal(`46:${b.lease.token}`);
        await lab.store.hosts.commit(b.lease, { ...TARGET, ipv4: null, ipv6: '2001:db8::7' });
        expect(await leaseRecord()).to.equal(null);
      });

      it("an expired lease with no record of its families (a repair's, an operator's, an older version's): both", async () => {
        const a = await change({ leaseMs: 50 });
        await lab.raw.hdel(hostKey, 'lf', 'lt', 'lr');
        await new Promise((r) => setTimeout(r, 80));
        expect((await reclaimed()).families).to.deep.equal(BOTH);
        await lab.raw.hset(hostKey, 'lu', '1'); // the repair's lease expires too
        const b = await change();
        expect([a.families, b.repairDue, b.families]).to.deep.equal([{ ipv4: true, ipv6: false }, true, BOTH]);
      });

      it('a record left by another lease (an older frontend took the lease over, or committed without dropping it): both', async () => {
        const a = await change({ leaseMs: 50 });
        await new Promise((r) => setTimeout(r, 80));
        // As an older version's admit would: a new token and lease end, the record left as it was.
        await lab.raw.hset(hostKey, 'lk', 'older-frontend', 'lu', '1');
        expect(await leaseRecord()).to.equal(`4:${a.lease.token}`);
        expect((await reclaimed()).families).to.deep.equal(BOTH);
      });

      it("a change that lost its lease and may land after the holder in flight widens that holder's families: its commit leaves a repair of them due", async () => {
        const pending = PREFIX + 'pending';
        const late = await change({ leaseMs: 50, expect: V6 }); // writes an AAAA, then stalls
        await new Promise((r) => setTimeout(r, 80));
        const over = await change(); // takes the expired lease over: writes both, records
        expect(over.families).to.deep.equal(BOTH);
        await lab.store.hosts.commit(over.lease, TARGET);
        const inFlight = await change({ expect: { ...WANT, ipv4: '203.0.113.8' } }); // an IPv4 change, in flight
        expect(inFlight.families).to.deep.equal({ ipv4: true, ipv6: false });
        expect(await lab.store.hosts.commit(late.lease, { ...TARGET, ipv4: null, ipv6: '2001:db8::7' })).to.equal(
          'lost',
        );
        expect(await leaseRecord(), 'widened and marked late').to.equal(`46r:${inFlight.lease.token}`);
        const before = await redisNow();
        expect(await lab.store.hosts.commit(inFlight.lease, TARGET)).to.equal('committed');
        expect(await lab.raw.hget(hostKey, '4'), 'recorded').to.equal('203.0.113.7');
        expect(Number(await lab.raw.zscore(pending, hostKey)), 'a repair is due now').to.be.within(
          before,
          Date.now() + 5,
        );
        const repair = await reclaimed();
        expect(repair.families).to.deep.equal(BOTH);
        await lab.store.hosts.commit(repair.lease, TARGET, { republish: true });
        expect(await lab.raw.hmget(hostKey, 'lk', 'lu', 'lf', 'lt', 'lr')).to.deep.equal([
          null,
          null,
          null,
          null,
          null,
        ]);
        expect(await lab.raw.zscore(pending, hostKey)).to.equal(null);
      });

      it('likewise a release of a maybe-applied change whose lease was taken over', async () => {
        const late = await change({ leaseMs: 50, expect: V6 });
        await new Promise((r) => setTimeout(r, 80));
        const over = await change();
        await lab.store.hosts.commit(over.lease, TARGET);
        const inFlight = await change({ expect: { ...WANT, ipv4: '203.0.113.8' } });
        await lab.store.hosts.release(late.lease, { republishInMs: 0 });
        expect(await leaseRecord()).to.equal(`46r:${inFlight.lease.token}`);
        // The holder's own UPDATE refused (a plain release): the widened families are still due.
        await lab.store.hosts.release(inFlight.lease);
        expect(await lab.raw.hget(hostKey, 'lk')).to.equal(inFlight.lease.token);
        expect((await reclaimed()).families).to.deep.equal(BOTH);
      });

      it('the holder that took the lease over directly: already writes what the late change wrote, and still repairs after it', async () => {
        const pending = PREFIX + 'pending';
        const late = await change({ leaseMs: 50 });
        await new Promise((r) => setTimeout(r, 80));
        const over = await change({ expect: { ...WANT, ipv4: '203.0.113.8' } });
        expect(over.families).to.deep.equal({ ipv4: true, ipv6: false });
        // The late UPDATE lands after the takeover's and is answered: its commit finds the lease gone.
        expect(await lab.store.hosts.commit(late.lease, TARGET)).to.equal('lost');
        const before = await redisNow();
        expect(await lab.store.hosts.commit(over.lease, { ...TARGET, ipv4: '203.0.113.8' })).to.equal('committed');
        expect(await lab.raw.hget(hostKey, '4')).to.equal('203.0.113.8');
        expect(Number(await lab.raw.zscore(pending, hostKey)), 'the late A is put right').to.be.within(
          before,
          Date.now() + 5,
        );
        expect((await reclaimed()).families).to.deep.equal({ ipv4: true, ipv6: false });
      });

      it('with nobody holding the host, a lost change leaves a repair of the families it wrote (r:lost)', async () => {
        const late = await change({ leaseMs: 50, expect: V6 });
        await new Promise((r) => setTimeout(r, 80));
        const over = await change();
        await lab.store.hosts.commit(over.lease, TARGET);
        expect(await lab.store.hosts.commit(late.lease, { ...TARGET, ipv4: null, ipv6: '2001:db8::7' })).to.equal(
          'lost',
        );
        expect([await lab.raw.hget(hostKey, 'lk'), await leaseRecord()]).to.deep.equal(['r:lost', '6:r:lost']);
        expect((await reclaimed()).families).to.deep.equal({ ipv4: false, ipv6: true });
      });

      it('a refused change that took a repair over leaves it due for what the interrupted change wrote, not its own family', async () => {
        const a = await change();
        await lab.store.hosts.release(a.lease, { republishInMs: 0 });
        const b = await change({ expect: V6 });
        expect(b.families).to.deep.equal(BOTH);
        await lab.store.hosts.release(b.lease, { republishInMs: 0, refused: true });
        expect(await leaseRecord()).to.equal(`4:${b.lease.token}`);
        expect((await reclaimed()).families).to.deep.equal({ ipv4: true, ipv6: false });
      });

      it('a refused republish that lost its lease widens nothing: nothing of it reached DNS', async () => {
        const late = await change({ leaseMs: 50, expect: V6 });
        await new Promise((r) => setTimeout(r, 80));
        const inFlight = await change();
        await lab.store.hosts.release(late.lease, { republishInMs: 0, failedRepublish: true });
        expect(await leaseRecord()).to.equal(`46:${inFlight.lease.token}`); // its takeover: both anyway
        await setLeaseRecord(`4:${inFlight.lease.token}`);
        await lab.store.hosts.release(late.lease, { republishInMs: 0, failedRepublish: true });
        expect(await leaseRecord()).to.equal(`4:${inFlight.lease.token}`);
        await lab.store.hosts.release(inFlight.lease);
        expect([await lab.raw.hget(hostKey, 'lk'), await leaseRecord()]).to.deep.equal([null, null]);
      });

      describe('a record as versions before kept it (one field, la): read, then replaced', () => {
        it('reclaim of an expired lease reads its families; the record is rewritten as plain fields', async () => {
          const a = await change({ leaseMs: 50 });
          await setLeaseRecord(`4:${a.lease.token}`, true);
          await new Promise((r) => setTimeout(r, 80));
          const r = await reclaimed();
          expect(r.families).to.deep.equal({ ipv4: true, ipv6: false });
          expect(await lab.raw.hexists(hostKey, 'la'), 'the old field goes').to.equal(0);
          expect(await leaseRecord()).to.equal(`4:${r.lease.token}`);
        });

        it('a request taking over an interrupted change reads its families', async () => {
          const a = await change({ leaseMs: 50, expect: V6 });
          await setLeaseRecord(`6:${a.lease.token}`, true);
          await new Promise((r) => setTimeout(r, 80));
          const b = await change();
          expect([b.repairDue, b.families]).to.deep.equal([true, BOTH]);
          expect(await lab.raw.hexists(hostKey, 'la')).to.equal(0);
        });

        it("the late mark: the holder's commit leaves a repair due now", async () => {
          const pending = PREFIX + 'pending';
          const inFlight = await change();
          await setLeaseRecord(`46r:${inFlight.lease.token}`, true);
          const before = await redisNow();
          expect(await lab.store.hosts.commit(inFlight.lease, TARGET)).to.equal('committed');
          expect(Number(await lab.raw.zscore(pending, hostKey)), 'a repair is due now').to.be.within(
            before,
            Date.now() + 5,
          );
          expect((await reclaimed()).families).to.deep.equal(BOTH);
        });

        it("a lost change's record (token r:lost): the repair writes its families", async () => {
          await lab.raw.hset(hostKey, 'lk', 'r:lost', 'lu', '1');
          await lab.raw.zadd(PREFIX + 'pending', 1, hostKey);
          await setLeaseRecord('6:r:lost', true);
          expect((await reclaimed()).families).to.deep.equal({ ipv4: false, ipv6: true });
        });
      });

      it("an operator's claim (host remove) writes both; refused after taking a repair over, it leaves the repair's families", async () => {
        const a = await change();
        await lab.store.hosts.release(a.lease, { republishInMs: 0 });
        const claimed = await lab.store.hosts.claim(HOST, 5000);
        if (claimed === undefined || claimed === 'busy') throw new Error(`expected a claim, got ${claimed}`);
        expect(claimed.repairDue).to.equal(true);
        expect(await leaseRecord()).to.equal(`46:${claimed.lease.token}`);
        await lab.store.hosts.release(claimed.lease, { republishInMs: 0, refused: true });
        expect((await reclaimed()).families).to.deep.equal({ ipv4: true, ipv6: false });
      });

      it('a host back from offline: both', async () => {
        await lab.store.hosts.commit((await change({ expect: { state: 'offline' } })).lease, {
          ...TARGET,
          ipv4: null,
          offline: true,
        });
        expect(await lab.raw.hget(hostKey, 's')).to.equal('offline');
        expect((await change()).families).to.deep.equal(BOTH);
      });
    });

    it('a republish commit (reconciler) records the state but keeps the time of the last update', async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.store.hosts.commit(a.lease, TARGET);
      const updated = await lab.raw.hget(hostKey, 'u');
      expect(updated).to.match(/^\d+$/);
      const b = await lab.store.hosts.admit(request({ minIntervalMs: 0, expect: { ...WANT, ipv4: '203.0.113.8' } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.release(b.lease, { republishInMs: 0 });
      await new Promise((r) => setTimeout(r, 5));
      await lab.store.hosts.commit((await reclaimed()).lease, TARGET, { republish: true });
      expect(await lab.raw.hmget(hostKey, 'u', '4', 'lk')).to.deep.equal([updated, '203.0.113.7', null]);
    });

    it('failed republishes are counted on the host (reclaim reports them) until a commit clears the count', async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.store.hosts.release(a.lease, { republishInMs: 0 });
      expect(await lab.raw.hexists(hostKey, 'rf'), "a request's release is not a failed republish").to.equal(0);
      for (let i = 0; i < 3; i++) {
        const r = await reclaimed();
        expect(r.failedRepublishes).to.equal(i);
        await lab.store.hosts.release(r.lease, { republishInMs: 0, failedRepublish: true });
      }
      expect(await lab.raw.hget(hostKey, 'rf')).to.equal('3');
      const last = await reclaimed();
      expect(last.failedRepublishes).to.equal(3);
      expect(last.host).to.not.have.property('rf');
      await lab.store.hosts.commit(last.lease, TARGET, { republish: true });
      expect(await lab.raw.hmget(hostKey, 'rf', 'lk', 'lu')).to.deep.equal([null, null, null]);
      // A lease dropped without a republish due (its zone no longer configured) drops the count too.
      const b = await lab.store.hosts.admit(request({ minIntervalMs: 0, expect: { ...WANT, ipv4: '203.0.113.9' } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.release(b.lease, { republishInMs: 0 });
      const r = await reclaimed();
      await lab.store.hosts.release(r.lease, { republishInMs: 0, failedRepublish: true });
      expect(await lab.raw.hget(hostKey, 'rf')).to.equal('1');
      await lab.store.hosts.release((await reclaimed()).lease);
      expect(await lab.raw.hmget(hostKey, 'rf', 'lk', 'lu')).to.deep.equal([null, null, null]);
    });

    it('repairOf: none for a settled host or a change in flight; when due, when and after how many failures; an attempt after a failure is in progress', async () => {
      expect(await lab.store.hosts.repairOf(HOST)).to.equal(undefined);
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      expect(await lab.store.hosts.repairOf(HOST), 'a change in flight').to.equal(undefined);
      const now = Date.now();
      await lab.store.hosts.release(a.lease, { republishInMs: 30_000 });
      const due = await lab.store.hosts.repairOf(HOST);
      expect(due).to.include({ failedRepublishes: 0, inProgress: false });
      expect(due?.dueAt).to.be.within(now + 29_000, now + 31_000);
      await lab.store.hosts.postpone([HOST], 0);
      const r = await reclaimed();
      expect(await lab.store.hosts.repairOf(HOST), 'the reconciler is at it').to.include({
        failedRepublishes: 0,
        inProgress: true,
      });
      await lab.store.hosts.release(r.lease, { republishInMs: 60_000, failedRepublish: true });
      expect(await lab.store.hosts.repairOf(HOST)).to.include({ failedRepublishes: 1, inProgress: false });
      await lab.store.hosts.postpone([HOST], 0);
      const again = await reclaimed();
      const trying = await lab.store.hosts.repairOf(HOST);
      expect(trying, 'a second attempt holds the lease').to.include({ failedRepublishes: 1, inProgress: true });
      expect(trying?.dueAt, 'until its lease ends').to.be.within(Date.now() + 4_000, Date.now() + 6_000);
      await lab.store.hosts.commit(again.lease, TARGET, { republish: true });
      expect(await lab.store.hosts.repairOf(HOST)).to.equal(undefined);
      expect(await lab.store.hosts.repairOf('other.dyn.example.org'), 'no such host').to.equal(undefined);
    });

    it('release with republishInMs > 0 is due that much later; postpone moves what is still pending, never sooner', async () => {
      const pending = PREFIX + 'pending';
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      const now = Date.now();
      await lab.store.hosts.release(a.lease, { republishInMs: 60_000 });
      expect(Number(await lab.raw.zscore(pending, hostKey))).to.be.within(now + 59_000, now + 61_000);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([]);
      await lab.store.hosts.postpone([HOST, 'not-pending.dyn.example.org'], 10_000);
      // Never sooner than already set (another frontend may have backed it off meanwhile)…
      expect(Number(await lab.raw.zscore(pending, hostKey))).to.be.within(now + 59_000, now + 61_000);
      expect(await lab.raw.zcard(pending), 'postpone adds nothing').to.equal(1);
      // …but a due one moves.
      await lab.raw.zadd(pending, now - 1000, hostKey);
      await lab.store.hosts.postpone([HOST], 10_000);
      expect(Number(await lab.raw.zscore(pending, hostKey))).to.be.within(now + 9_000, now + 11_000);
    });

    it('release leaves the counters alone when another request counted since', async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.raw.hincrby(hostKey, 'fs', 1); // as if an operator reset / another count happened
      const counters = await lab.raw.hmget(hostKey, 'fl', 'fc');
      await lab.store.hosts.release(a.lease);
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc', 'lk')).to.deep.equal([...counters, null]);
    });

    it('release of a lease that is no longer ours changes nothing', async () => {
      const a = await lab.store.hosts.admit(request({ leaseMs: 30 }));
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await new Promise((r) => setTimeout(r, 60));
      const b = await lab.store.hosts.admit(request());
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      const snapshot = await lab.raw.hgetall(hostKey);
      await lab.store.hosts.release(a.lease);
      expect(await lab.raw.hgetall(hostKey)).to.deep.equal(snapshot);
    });

    /** A change whose lease ends (30 ms) before its holder commits: returns its admission. */
    const changeThatStalls = async (over: Partial<AdmitRequest> = {}) => {
      const a = await lab.store.hosts.admit(request({ leaseMs: 30, ...over }));
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await new Promise((r) => setTimeout(r, 60));
      return a;
    };
    const NEWER: TargetState = { ...TARGET, ipv4: '192.0.2.21' };

    it('commit after another request took the lease over writes nothing and leaves that lease alone', async () => {
      const a = await changeThatStalls();
      const b = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: NEWER.ipv4! } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      expect(b.repairDue, 'b took over an expired lease').to.equal(true);
      const { lr: lateBefore, ...snapshot } = await lab.raw.hgetall(hostKey);
      expect(await lab.store.hosts.commit(a.lease, TARGET)).to.equal('lost');
      const { lr: late, ...after } = await lab.raw.hgetall(hostKey);
      expect(after, 'nothing written: b publishes and records its own state').to.deep.equal(snapshot);
      // …and repairs after it: a's UPDATE may land after b's (b's record, now marked late).
      expect([snapshot.lf, snapshot.lt, lateBefore, late]).to.deep.equal(['4', b.lease.token, undefined, '1']);
      expect(logger.lines.some((l) => l.level === 'warn' && /lease ended before the commit/.test(l.msg))).to.equal(
        true,
      );
      expect(await lab.store.hosts.commit(b.lease, NEWER)).to.equal('committed');
      expect(await lab.raw.hget(hostKey, '4')).to.equal(NEWER.ipv4);
      expect(await lab.raw.hget(hostKey, 'lk'), 'a repair is due').to.equal(b.lease.token);
    });

    it('commit after the newer holder already recorded its state: Redis keeps the newer record and its republish is due', async () => {
      // a's UPDATE may reach DNS after b's: DNS could hold a's address while Redis holds b's.
      const a = await changeThatStalls();
      const b = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: NEWER.ipv4! } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.commit(b.lease, NEWER);
      expect(await lab.store.hosts.commit(a.lease, TARGET)).to.equal('lost');
      expect(await lab.raw.hget(hostKey, '4'), 'the newer record stays').to.equal(NEWER.ipv4);
      expect(await lab.store.hosts.staleLeases(10), 'a republish of it is due now').to.deep.equal([HOST]);
      const again = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: NEWER.ipv4! } }));
      expect(again.kind, 'never nochg while DNS may differ').to.equal('change');
      if (again.kind === 'change') await lab.store.hosts.release(again.lease, { republishInMs: 0 });
      const r = await reclaimed();
      expect(r.host.ipv4, 'the reconciler publishes the newer record').to.equal(NEWER.ipv4);
      expect(await lab.store.hosts.commit(r.lease, NEWER, { republish: true })).to.equal('committed');
      expect(await lab.raw.hmget(hostKey, '4', 'lk')).to.deep.equal([NEWER.ipv4, null]);
    });

    it('commit after the reconciler took the lease over and recorded its republish: not written, due again', async () => {
      const a = await changeThatStalls();
      const r = await reclaimed();
      await lab.store.hosts.commit(r.lease, { ...TARGET, ipv4: null }, { republish: true });
      expect(await lab.store.hosts.commit(a.lease, TARGET)).to.equal('lost');
      expect(await lab.raw.hget(hostKey, '4')).to.equal(null);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([HOST]);
    });

    it('a maybe-applied release after the newer holder recorded its state has the record published again', async () => {
      // a's UPDATE got no answer (it may still be applied, after b's): as for a lost commit.
      const a = await changeThatStalls();
      const b = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: NEWER.ipv4! } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.commit(b.lease, NEWER);
      await lab.store.hosts.release(a.lease, { republishInMs: 0 });
      expect(await lab.raw.hmget(hostKey, '4', 'lk'), 'the newer record, a repair due').to.deep.equal([
        NEWER.ipv4,
        'r:lost',
      ]);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([HOST]);
      // A plain release (an answered refusal: nothing of a's reached DNS) leaves it alone.
      await lab.store.hosts.commit((await reclaimed()).lease, NEWER, { republish: true });
      const c = await changeThatStalls({ expect: { ...WANT, ipv4: '192.0.2.40' } });
      const d = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: '192.0.2.41' } }));
      if (d.kind !== 'change') throw new Error(`expected change, got ${d.kind}`);
      await lab.store.hosts.commit(d.lease, { ...TARGET, ipv4: '192.0.2.41' });
      await lab.store.hosts.release(c.lease);
      expect(await lab.raw.hget(hostKey, 'lk')).to.equal(null);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([]);
      // Nor a refused republish of the reconciler's whose lease a request took over meanwhile.
      await lab.store.hosts.setState(HOST, 'active'); // the frequency rule afresh
      const e = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: '192.0.2.42' } }));
      if (e.kind !== 'change') throw new Error(`expected change, got ${e.kind}`);
      await lab.store.hosts.release(e.lease, { republishInMs: 0 });
      const r = await lab.store.hosts.reclaim(HOST, 30);
      if (!r) throw new Error('nothing to reclaim');
      await new Promise((resolve) => setTimeout(resolve, 60));
      const f = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: '192.0.2.43' } }));
      if (f.kind !== 'change') throw new Error(`expected change, got ${f.kind}`);
      await lab.store.hosts.commit(f.lease, { ...TARGET, ipv4: '192.0.2.43' });
      await lab.store.hosts.release(r.lease, { republishInMs: 5000, failedRepublish: true });
      expect(await lab.raw.hget(hostKey, 'lk')).to.equal(null);
      expect(await lab.store.hosts.staleLeases(10)).to.deep.equal([]);
    });

    it("commit into a host removed and added again (now bob's) writes nothing and has the new record published", async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.store.hosts.remove(HOST);
      await lab.store.hosts.add(HOST, 'bob', 'dynamic');
      expect(await lab.store.hosts.commit(a.lease, TARGET)).to.equal('lost');
      expect(await lab.raw.hmget(hostKey, 'o', '4')).to.deep.equal(['bob', null]);
      expect(
        await lab.store.hosts.staleLeases(10),
        "DNS may hold alice's address: bob's empty record goes out",
      ).to.deep.equal([HOST]);
    });

    it("a lost commit and a release after a takeover both undo the request's count when nobody counted since", async () => {
      const first = await lab.store.hosts.admit(request());
      if (first.kind !== 'change') throw new Error(`expected change, got ${first.kind}`);
      await lab.store.hosts.commit(first.lease, TARGET);
      const counted = await lab.raw.hmget(hostKey, 'fl', 'fc');
      expect(counted[1]).to.equal('0');
      // A frequent request (fc 1) whose lease the reconciler takes over: its dnserr undoes the count.
      const a = await changeThatStalls({ expect: { ...WANT, ipv4: '192.0.2.30' } });
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('1');
      const r = await reclaimed();
      await lab.store.hosts.release(a.lease);
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc'), 'dnserr does not count').to.deep.equal(counted);
      expect(await lab.raw.hget(hostKey, 'lk'), 'the reconciler keeps its lease').to.equal(r.lease.token);
      await lab.store.hosts.commit(r.lease, TARGET, { republish: true });
      // The same with a commit that finds the lease gone (the reply is 911, which does not count).
      const b = await changeThatStalls({ expect: { ...WANT, ipv4: '192.0.2.31' } });
      expect(await lab.raw.hget(hostKey, 'fc')).to.equal('1');
      await lab.store.hosts.commit((await reclaimed()).lease, TARGET, { republish: true });
      expect(await lab.store.hosts.commit(b.lease, { ...TARGET, ipv4: '192.0.2.31' })).to.equal('lost');
      expect(await lab.raw.hmget(hostKey, 'fl', 'fc'), '911 does not count').to.deep.equal(counted);
    });

    it('a count undo never reaches a host removed and added again meanwhile, even when its fs has the same number', async () => {
      for (const finish of ['commit', 'release'] as const) {
        const a = await lab.store.hosts.admit(request());
        if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
        await lab.store.hosts.remove(HOST);
        await lab.store.hosts.add(HOST, 'bob', 'dynamic');
        await new Promise((r) => setTimeout(r, 5)); // bob's first request: another millisecond
        const b = await lab.store.hosts.admit(request({ account: 'bob' }));
        if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
        await lab.store.hosts.commit(b.lease, TARGET);
        const bobs = await lab.raw.hmget(hostKey, 'fl', 'fc', 'fs');
        expect(bobs[2], "bob's host counts from the start again: the same fs as alice's request").to.equal(
          (a.lease as { undo?: { sequence: string } }).undo?.sequence,
        );
        if (finish === 'commit') expect(await lab.store.hosts.commit(a.lease, TARGET)).to.equal('lost');
        else await lab.store.hosts.release(a.lease);
        expect(await lab.raw.hmget(hostKey, 'fl', 'fc', 'fs'), `${finish}: bob's count stays`).to.deep.equal(bobs);
        await lab.store.hosts.remove(HOST);
        await lab.store.hosts.add(HOST, 'alice', 'dynamic');
      }
    });

    it('commit keeps a state an operator set meanwhile, and never recreates a removed host', async () => {
      const a = await lab.store.hosts.admit(request());
      if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
      await lab.store.hosts.setState(HOST, 'closed');
      await lab.store.hosts.commit(a.lease, TARGET);
      expect(await lab.raw.hmget(hostKey, 's', '4')).to.deep.equal(['closed', '203.0.113.7']);

      await lab.store.hosts.setState(HOST, 'active');
      const b = await lab.store.hosts.admit(request({ expect: { ...WANT, ipv4: '192.0.2.1' } }));
      if (b.kind !== 'change') throw new Error(`expected change, got ${b.kind}`);
      await lab.store.hosts.remove(HOST);
      await lab.store.hosts.commit(b.lease, TARGET);
      expect(await lab.raw.exists(hostKey)).to.equal(0);
    });
  });

  describe('two frontends on one Redis', () => {
    let second: Store;
    before(function () {
      const cfg = storeConfig(lab.url);
      second = storeOn(createRedis(cfg.redis, logger), cfg, logger);
    });
    after(async () => second?.close());

    async function race(n: number, req: AdmitRequest): Promise<Admission[]> {
      return Promise.all(Array.from({ length: n }, (_, i) => (i % 2 === 0 ? lab.store : second).hosts.admit(req)));
    }
    /** How many of each kind (a rejection by its outcome). */
    const tally = (results: Admission[]) =>
      results.reduce<Record<string, number>>((acc, r) => {
        const kind = r.kind === 'rejected' ? r.outcome : r.kind;
        return { ...acc, [kind]: (acc[kind] ?? 0) + 1 };
      }, {});

    it('50 concurrent counting admits through two clients count exactly', async () => {
      const results = await race(50, request({ expect: null, maxFrequent: 1000 }));
      expect(tally(results)).to.deep.equal({ nochg: 50 });
      expect(await lab.raw.hmget(hostKey, 'fc', 'fs')).to.deep.equal(['49', '50']);
    });

    it('50 concurrent admits with the default limit: 4 served, the rest abuse', async () => {
      const results = await race(50, request({ expect: null }));
      expect(tally(results)).to.deep.equal({ nochg: 4, abuse: 46 });
      expect(await lab.raw.hmget(hostKey, 's', 'fc', 'fs')).to.deep.equal(['blocked', '4', '5']);
    });

    it('50 concurrent changes: exactly one lease, the others busy and uncounted', async () => {
      const results = await race(50, request({ maxFrequent: 1000 }));
      expect(tally(results)).to.deep.equal({ change: 1, busy: 49 });
      expect(await lab.raw.hmget(hostKey, 'fc', 'fs')).to.deep.equal(['0', '1']);
    });
  });

  describe('guarded admit', () => {
    // A hash string with the characters real ones have ($ , = /): the guard compares its SHA-1.
    const GINA_HASH = '$scrypt$ln=15,r=8,p=1$c2FsdC9zYWx0K3NhbHQ$aGFzaC9oYXNoK2hhc2g=';
    const GINA_HOST = 'gina.dyn.example.org';
    const ginaKey = PREFIX + 'h:' + GINA_HOST;
    const SOURCE = '198.51.100.20';
    const AGENT = 'GuardTest/1.0 guard@example.test';
    const sha1 = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');

    function guard(
      over: { sourceIp?: string; userAgent?: string; name?: string; donator?: boolean; digest?: string } = {},
    ): AdmitGuard {
      return {
        sourceIp: over.sourceIp ?? SOURCE,
        userAgent: over.userAgent ?? AGENT,
        login: {
          account: { name: over.name ?? 'gina', donator: over.donator ?? false },
          hashDigest: over.digest ?? sha1(GINA_HASH),
        },
      };
    }
    const ginaRequest = (over: Partial<AdmitRequest> = {}) =>
      request({ fqdn: GINA_HOST, account: 'gina', guard: guard(), ...over });

    /** Every key of the database with its type and value (no TTLs): "nothing written" means equal snapshots. */
    async function dbSnapshot(): Promise<Record<string, unknown>> {
      const out: Record<string, unknown> = {};
      for (const key of (await lab.raw.keys('*')).sort()) {
        const type = await lab.raw.type(key);
        if (type === 'hash') out[key] = { hash: await lab.raw.hgetall(key) };
        else if (type === 'string') out[key] = { string: await lab.raw.get(key) };
        else if (type === 'set') out[key] = { set: (await lab.raw.smembers(key)).sort() };
        else if (type === 'zset') out[key] = { zset: await lab.raw.zrange(key, 0, -1, 'WITHSCORES') };
        else out[key] = { type };
      }
      return out;
    }

    beforeEach(async () => {
      await lab.store.accounts.create({ name: 'gina', passwordHash: GINA_HASH, donator: false, createdAt: 3 });
      await lab.store.hosts.add(GINA_HOST, 'gina', 'dynamic');
    });

    it('a holding guard: the same change / nochg as an unguarded admit, counted the same way', async () => {
      const a = await lab.store.hosts.admit(ginaRequest());
      expect(a.kind).to.equal('change');
      if (a.kind !== 'change') return;
      expect(a.host).to.deep.include({
        fqdn: GINA_HOST,
        account: 'gina',
        type: 'dynamic',
        state: 'active',
        ipv4: null,
      });
      expect(await lab.raw.hget(ginaKey, 'lk')).to.equal(a.lease.token);
      expect([a.families, await lab.raw.hmget(ginaKey, 'lf', 'lt')]).to.deep.equal([
        { ipv4: true, ipv6: false },
        ['4', a.lease.token],
      ]);
      expect(await lab.raw.zrange(PREFIX + 'pending', 0, -1)).to.deep.equal([ginaKey]);
      expect(await lab.raw.hmget(ginaKey, 'fc', 'fs')).to.deep.equal(['0', '1']);
      // busy while the lease is held, like the unguarded admit
      expect(await lab.store.hosts.admit(ginaRequest())).to.deep.equal({ kind: 'busy' });
      await lab.store.hosts.commit(a.lease, TARGET);
      expect(await lab.raw.zcard(PREFIX + 'pending')).to.equal(0);

      const b = await lab.store.hosts.admit(ginaRequest());
      expect(b.kind).to.equal('nochg');
      expect(b).to.deep.equal({ kind: 'nochg' });
      expect(await lab.raw.hmget(ginaKey, 'fc', 'fs', 'lk')).to.deep.equal(['1', '2', null]);
      // and an unguarded admit of the same request agrees
      expect((await lab.store.hosts.admit(request({ fqdn: GINA_HOST, account: 'gina' }))).kind).to.equal('nochg');
      expect(await lab.raw.hmget(ginaKey, 'fc', 'fs')).to.deep.equal(['2', '3']);
      // a differing field is a change again
      expect((await lab.store.hosts.admit(ginaRequest({ expect: { ...WANT, ipv4: '192.0.2.99' } }))).kind).to.equal(
        'change',
      );
    });

    it('a holding guard passes the other outcomes through (unknown host, not owner, abuse) and the frequency rule', async () => {
      expect(await lab.store.hosts.admit(ginaRequest({ fqdn: 'other.dyn.example.org' }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'unknown-host',
      });
      expect(await lab.store.hosts.admit(ginaRequest({ fqdn: HOST }))).to.deep.equal({
        kind: 'rejected',
        outcome: 'not-owner',
      });
      const kinds: string[] = [];
      for (let i = 0; i < 5; i++) {
        const a = await lab.store.hosts.admit(ginaRequest({ expect: null }));
        kinds.push(a.kind === 'rejected' ? a.outcome : a.kind);
      }
      expect(kinds).to.deep.equal(['nochg', 'nochg', 'nochg', 'nochg', 'abuse']);
      expect(await lab.raw.hget(ginaKey, 's')).to.equal('blocked');
    });

    it("a donator's guard holds when the account is a donator", async () => {
      await lab.store.accounts.setDonator('gina', true);
      expect((await lab.store.hosts.admit(ginaRequest({ guard: guard({ donator: true }) }))).kind).to.equal('change');
    });

    it('checks of other sources, agents and accounts do not apply', async () => {
      await lab.raw.set(lab.store.keys.junkBlock(SOURCE, 'OtherAgent/1.0'), '1', 'PX', 60_000);
      await lab.raw.set(lab.store.keys.junkBlock('198.51.100.21', AGENT), '1', 'PX', 60_000);
      await lab.raw.set(lab.store.keys.cooldownBySource('198.51.100.21'), '1', 'PX', 60_000);
      await lab.raw.set(lab.store.keys.cooldownByAccount('alice'), '1', 'PX', 60_000);
      expect((await lab.store.hosts.admit(ginaRequest())).kind).to.equal('change');
    });

    describe('a failing guard: refused, naming the check, and nothing written', () => {
      /** Give the host some history first, so "unchanged" covers fl/fc/fs and the addresses. */
      async function withHistory(): Promise<void> {
        const a = await lab.store.hosts.admit(ginaRequest({ guard: undefined }));
        if (a.kind !== 'change') throw new Error(`expected change, got ${a.kind}`);
        await lab.store.hosts.commit(a.lease, { ...TARGET, ipv4: '192.0.2.1' });
      }

      async function expectRefused(check: GuardCheck, req: AdmitRequest): Promise<void> {
        const hostBefore = await lab.raw.hgetall(ginaKey);
        const dbBefore = await dbSnapshot();
        expect(hostBefore).to.include({ 4: '192.0.2.1', fc: '0', fs: '1' });
        expect(await lab.store.hosts.admit(req)).to.deep.equal({ kind: 'refused', check });
        // the same request, counting only: refused as well
        expect(await lab.store.hosts.admit({ ...req, expect: null })).to.deep.equal({ kind: 'refused', check });
        const hostAfter = await lab.raw.hgetall(ginaKey);
        expect(hostAfter).to.deep.equal(hostBefore);
        expect(hostAfter).to.not.have.property('lk');
        expect(hostAfter).to.not.have.property('lu');
        expect(await lab.raw.zcard(PREFIX + 'pending')).to.equal(0);
        expect(await dbSnapshot()).to.deep.equal(dbBefore);
      }

      beforeEach(withHistory);

      it('wrong hash digest (the password changed since the credentials were verified)', async () => {
        await expectRefused('stale', ginaRequest({ guard: guard({ digest: sha1('$scrypt$some-other-hash') }) }));
        await expectRefused('stale', ginaRequest({ guard: guard({ digest: sha1(GINA_HASH).toUpperCase() }) }));
        await expectRefused('stale', ginaRequest({ guard: guard({ digest: '' }) }));
        // and after a real password change the old digest no longer holds
        await lab.store.accounts.setPasswordHash('gina', '$scrypt$ln=15,r=8,p=1$bmV3$bmV3aGFzaA');
        await expectRefused('stale', ginaRequest());
      });

      it("donator flag different from the account's (either way)", async () => {
        await expectRefused('stale', ginaRequest({ guard: guard({ donator: true }) }));
        await lab.store.accounts.setDonator('gina', true);
        await expectRefused('stale', ginaRequest({ guard: guard({ donator: false }) }));
      });

      it('account missing', async () => {
        await lab.raw.del(lab.store.keys.account('gina'));
        await expectRefused('stale', ginaRequest());
        // a guard naming an account that never existed, for a host it does not own
        await expectRefused('stale', ginaRequest({ account: 'ghost', guard: guard({ name: 'ghost' }) }));
      });

      it('junk block set on the (source, agent) pair', async () => {
        await lab.raw.set(lab.store.keys.junkBlock(SOURCE, AGENT), '1', 'PX', 60_000);
        await expectRefused('agent', ginaRequest());
      });

      it('login cool-down of the source (an IPv6 source by its /64)', async () => {
        await lab.raw.set(lab.store.keys.cooldownBySource(SOURCE), '1', 'PX', 60_000);
        await expectRefused('login', ginaRequest());
        await lab.raw.set(lab.store.keys.cooldownBySource('2001:db8:1:2::5'), '1', 'PX', 60_000);
        await expectRefused('login', ginaRequest({ guard: guard({ sourceIp: '2001:db8:1:2:aaaa::99' }) }));
      });

      it('login cool-down of the account', async () => {
        await lab.raw.set(lab.store.keys.cooldownByAccount('gina'), '1', 'PX', 60_000);
        await expectRefused('login', ginaRequest());
      });

      it('passwordOnly (the full path): cool-downs and junk blocks pass, a changed hash still refuses', async () => {
        await lab.raw.set(lab.store.keys.cooldownByAccount('gina'), '1', 'PX', 60_000);
        await lab.raw.set(lab.store.keys.cooldownBySource(SOURCE), '1', 'PX', 60_000);
        await lab.raw.set(lab.store.keys.junkBlock(SOURCE, AGENT), '1', 'PX', 60_000);
        await expectRefused(
          'stale',
          ginaRequest({ guard: { ...guard({ digest: sha1('$scrypt$other') }), passwordOnly: true } }),
        );
        const passwordOnly = { ...guard(), passwordOnly: true };
        const a = await lab.store.hosts.admit(
          ginaRequest({ guard: passwordOnly, expect: { ...WANT, ipv4: '192.0.2.77' } }),
        );
        expect(a.kind).to.equal('change');
        if (a.kind === 'change') await lab.store.hosts.release(a.lease);
      });

      it('the guard is checked before the host: refused even for a host that would be busy or nohost', async () => {
        await lab.raw.set(lab.store.keys.cooldownByAccount('gina'), '1', 'PX', 60_000);
        await expectRefused('login', ginaRequest({ fqdn: 'other.dyn.example.org' }));
        await lab.raw.del(lab.store.keys.cooldownByAccount('gina'));
        const held = await lab.store.hosts.admit(ginaRequest({ expect: { ...WANT, ipv4: '192.0.2.50' } }));
        expect(held.kind).to.equal('change');
        await lab.raw.set(lab.store.keys.cooldownByAccount('gina'), '1', 'PX', 60_000);
        const before = await lab.raw.hgetall(ginaKey);
        expect(await lab.store.hosts.admit(ginaRequest())).to.deep.equal({ kind: 'refused', check: 'login' });
        expect(await lab.raw.hgetall(ginaKey)).to.deep.equal(before);
      });
    });
  });

  describe('admin', () => {
    it('add normalises the name and validates account, type and syntax', async () => {
      await lab.store.hosts.add(' Second.DYN.example.org. ', 'bob', 'dynamic');
      expect(await lab.raw.hgetall(PREFIX + 'h:second.dyn.example.org')).to.deep.equal({
        o: 'bob',
        t: 'dynamic',
        s: 'active',
      });
      const failures: unknown[] = [];
      for (const args of [
        ['second.dyn.example.org', 'bob', 'dynamic'],
        ['third.dyn.example.org', 'nobody', 'dynamic'],
        ['third.dyn.example.org', 'bob', 'teleport'],
        ['not a name', 'bob', 'dynamic'],
      ] as const) {
        try {
          await lab.store.hosts.add(args[0], args[1], args[2] as 'dynamic');
          failures.push(undefined);
        } catch (err) {
          failures.push(err);
        }
      }
      expect(failures[0]).to.be.instanceOf(ConflictError);
      expect(failures[1]).to.be.instanceOf(NotFoundError);
      expect(failures[2]).to.be.instanceOf(InvalidInputError);
      expect(failures[3]).to.be.instanceOf(InvalidInputError);
      expect(await lab.raw.exists(PREFIX + 'h:third.dyn.example.org')).to.equal(0);
    });

    it('get, list (all / per account), remove', async () => {
      await lab.store.hosts.add('b.dyn.example.org', 'bob', 'dynamic');
      await lab.store.hosts.add('a.dyn.example.org', 'alice', 'static');
      expect(await lab.store.hosts.get('HOME.dyn.example.org')).to.deep.equal({
        fqdn: HOST,
        account: 'alice',
        type: 'dynamic',
        state: 'active',
        ipv4: null,
        ipv6: null,
        wildcard: false,
        mx: null,
        backmx: false,
        updatedAt: 0,
      });
      expect(await lab.store.hosts.get('missing.dyn.example.org')).to.equal(undefined);
      expect((await lab.store.hosts.list()).map((h) => h.fqdn)).to.deep.equal([
        'a.dyn.example.org',
        'b.dyn.example.org',
        HOST,
      ]);
      expect((await lab.store.hosts.list('alice')).map((h) => h.fqdn)).to.deep.equal(['a.dyn.example.org', HOST]);
      await lab.store.hosts.remove('b.dyn.example.org');
      expect(await lab.raw.exists(PREFIX + 'h:b.dyn.example.org')).to.equal(0);
      let error: unknown;
      try {
        await lab.store.hosts.remove('b.dyn.example.org');
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(NotFoundError);
    });

    it('list walks more hosts than one SCAN batch', async () => {
      const pipeline = lab.raw.pipeline();
      for (let i = 0; i < 2500; i++)
        pipeline.hset(`${PREFIX}h:n${i}.dyn.example.org`, 'o', i % 2 ? 'alice' : 'bob', 't', 'dynamic', 's', 'active');
      await pipeline.exec();
      await lab.raw.set(PREFIX + 'ag', 'x'); // other keys of the prefix are not hosts
      expect(await lab.store.hosts.list()).to.have.length(2501);
      expect(await lab.store.hosts.list('bob')).to.have.length(1250);
    });

    it('setState validates the host and the state', async () => {
      let error: unknown;
      try {
        await lab.store.hosts.setState('missing.dyn.example.org', 'closed');
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(NotFoundError);
      expect(await lab.raw.exists(PREFIX + 'h:missing.dyn.example.org')).to.equal(0);
    });

    it('a host costs a few hundred bytes at most', async () => {
      await lab.raw.hset(
        hostKey,
        '4',
        '203.0.113.250',
        '6',
        '2001:db8:1234:5678:9abc:def0:1234:5678',
        'w',
        '1',
        'm',
        'mx.example.net',
        'b',
        '1',
        'u',
        '1700000000000',
        'fl',
        '1700000000000',
        'fc',
        '3',
        'fs',
        '123456',
      );
      const bytes = Number(await lab.raw.memory('USAGE', hostKey));
      expect(bytes).to.be.below(300);
    });
  });
});
