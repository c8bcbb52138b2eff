/**
 * The last request of a host and its counts by the hour (issue 31 item 7),
 * docs/operators.md, "The last request of a host": written by the admission script and by the commit and release of
 * a change, against a real redis-server:
 * what each reply records, what records nothing (the echo's counting, a refused login, another account's request),
 * a lost commit's failure counted without taking the newer request's place, and the hour turning.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { AdmitGuard, AdmitRequest, Expectations } from '../../src/app/ports.js';
import { countsOverDay, HOUR_MS, RECORDED_AGENT_MAX } from '../../src/core/request-log.js';
import type { TargetState } from '../../src/core/types.js';
import { HOST_FIELDS as HF } from '../../src/store/keys.js';
import { storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 'rl:';
const HOST = 'log.dyn.example.org';
const HASH = '$scrypt$request-log';
const SOURCE = '198.51.100.7';
const AGENT = 'request-log-test/2.0 tests@example.test';
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const want = (ipv4: string): Expectations => ({ state: 'active', ipv4, wildcard: '0', mx: '', backmx: '0' });
const target = (ipv4: string): TargetState => ({
  ipv4,
  ipv6: null,
  wildcard: false,
  mx: null,
  backmx: false,
  offline: false,
});

describe('the last request of a host (real redis-server)', function () {
  const lab = useRedisStore('request-log', (url) => storeTestConfig(url, { keyPrefix: PREFIX }));
  const hostKey = `${PREFIX}h:${HOST}`;

  const guard = (digest = sha1(HASH), userAgent = AGENT): AdmitGuard => ({
    sourceIp: SOURCE,
    userAgent,
    login: { account: { name: 'lena', donator: false }, hashDigest: digest },
  });
  const request = (ipv4: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({
    fqdn: HOST,
    account: 'lena',
    minIntervalMs: 0,
    maxFrequent: 5,
    expect: want(ipv4),
    leaseMs: 5000,
    guard: guard(),
    note: 'nochg',
    ...over,
  });
  const show = async () => {
    const host = await lab.store.hosts.get(HOST);
    if (!host) throw new Error('no host');
    return { last: host.lastRequest, counts: countsOverDay(host.requestTallies ?? [], Date.now()) };
  };
  const counts = (good: number, nochg: number, refused: number, failed: number) => ({ good, nochg, refused, failed });
  const changed = async (ipv4: string, over: Partial<AdmitRequest> = {}) => {
    const admission = await lab.store.hosts.admit(request(ipv4, over));
    if (admission.kind !== 'change') throw new Error(`expected a change, got ${admission.kind}`);
    return admission;
  };

  beforeEach(async () => {
    await lab.raw.flushdb();
    await lab.store.accounts.create({ name: 'lena', passwordHash: HASH, donator: false, createdAt: 1 });
    await lab.store.accounts.create({ name: 'otto', passwordHash: '$scrypt$otto', donator: false, createdAt: 2 });
    await lab.store.hosts.add(HOST, 'lena', 'dynamic');
  });

  it('good, nochg, a refused offline request, dnserr and 911: each reply, source and agent, counted', async () => {
    expect((await show()).last).to.equal(undefined);
    const before = Date.now();
    const first = await changed('192.0.2.1');
    // In flight: time, source and agent are there, the reply is its commit's.
    expect((await show()).last).to.deep.include({ reply: null, source: SOURCE, userAgent: AGENT });
    expect(await lab.store.hosts.commit(first.lease, target('192.0.2.1'))).to.equal('committed');
    const afterGood = await show();
    expect(afterGood.last).to.deep.include({ reply: 'good', source: SOURCE, userAgent: AGENT });
    expect(afterGood.last!.at).to.be.within(before - 1000, Date.now() + 1000);
    expect(afterGood.counts).to.deep.equal(counts(1, 0, 0, 0));

    expect((await lab.store.hosts.admit(request('192.0.2.1'))).kind).to.equal('nochg');
    expect((await show()).last?.reply).to.equal('nochg');
    // The offline request of a non-donator is counted without a change (expect null), answered !donator.
    expect((await lab.store.hosts.admit(request('192.0.2.1', { expect: null, note: '!donator' }))).kind).to.equal(
      'nochg',
    );
    expect(await show()).to.deep.include({ counts: counts(1, 1, 1, 0) });
    expect((await show()).last?.reply).to.equal('!donator');

    const failing = await changed('192.0.2.2');
    await lab.store.hosts.release(failing.lease, { answered: 'dnserr' });
    expect((await show()).last?.reply).to.equal('dnserr');
    const faulty = await changed('192.0.2.3');
    await lab.store.hosts.release(faulty.lease, {});
    const end = await show();
    expect(end.last?.reply, 'a release without a reply named is the service’s fault').to.equal('911');
    expect(end.counts).to.deep.equal(counts(1, 1, 1, 2));
    // The record stayed as it was: dnserr and 911 change nothing of the host.
    expect(await lab.raw.hget(hostKey, HF.ipv4)).to.equal('192.0.2.1');
  });

  it('closed and blocked hosts and the request that blocks one: refused, with the reply each got', async () => {
    await lab.store.hosts.setState(HOST, 'closed');
    expect((await lab.store.hosts.admit(request('192.0.2.1'))).kind).to.equal('rejected');
    expect(await show()).to.deep.include({ counts: counts(0, 0, 1, 0) });
    expect((await show()).last?.reply).to.equal('!active');
    await lab.store.hosts.setState(HOST, 'active');
    // minInterval a minute, at most one frequent request: the third request in a row blocks the host.
    const frequent = { minIntervalMs: 60_000, maxFrequent: 1 };
    const first = await changed('192.0.2.1', frequent);
    await lab.store.hosts.commit(first.lease, target('192.0.2.1'));
    expect((await lab.store.hosts.admit(request('192.0.2.1', frequent))).kind).to.equal('nochg');
    expect(await lab.store.hosts.admit(request('192.0.2.1', frequent))).to.deep.equal({
      kind: 'rejected',
      outcome: 'abuse',
    });
    expect((await show()).last?.reply).to.equal('abuse');
    expect(await lab.store.hosts.admit(request('192.0.2.1', frequent))).to.deep.equal({
      kind: 'rejected',
      outcome: 'abuse',
    });
    expect(await show()).to.deep.include({ counts: counts(1, 1, 3, 0) });
  });

  it('records nothing for the echo’s counting, a refused login or another account’s request', async () => {
    const first = await changed('192.0.2.1');
    await lab.store.hosts.commit(first.lease, target('192.0.2.1'));
    const recorded = await lab.raw.hgetall(hostKey);
    const logFields = (h: Record<string, string>) =>
      [
        HF.requestAt,
        HF.requestReply,
        HF.requestSource,
        HF.requestAgent,
        HF.tallyHour,
        HF.tallyNochg,
        HF.tallyEarlier,
      ].map((f) => h[f] ?? null);
    // The address echo with a hostname: counted by the frequency rule, not an update.
    expect((await lab.store.hosts.admit(request('192.0.2.1', { expect: null, note: undefined }))).kind).to.equal(
      'nochg',
    );
    // A password changed since the credentials were verified: the guard refuses before the host is read.
    const refused = await lab.store.hosts.admit(request('192.0.2.9', { guard: guard(sha1('$scrypt$old')) }));
    expect(refused.kind).to.equal('refused');
    // Another account's credentials on this host.
    const other = await lab.store.hosts.admit(
      request('192.0.2.9', {
        account: 'otto',
        guard: { ...guard(), login: { account: { name: 'otto', donator: false }, hashDigest: sha1('$scrypt$otto') } },
      }),
    );
    expect(other).to.deep.equal({ kind: 'rejected', outcome: 'not-owner' });
    expect(logFields(await lab.raw.hgetall(hostKey))).to.deep.equal(logFields(recorded));
  });

  it('a commit that lost its lease counts its 911 but leaves the newer request as the last', async () => {
    const stale = await changed('192.0.2.1', { leaseMs: 30 });
    await new Promise((r) => setTimeout(r, 60));
    const newer = await changed('192.0.2.2', { guard: guard(sha1(HASH), 'newer-client/1') });
    expect(await lab.store.hosts.commit(stale.lease, target('192.0.2.1'))).to.equal('lost');
    const mid = await show();
    expect(mid.last).to.deep.include({ reply: null, userAgent: 'newer-client/1' });
    expect(mid.counts).to.deep.equal(counts(0, 0, 0, 1));
    expect(await lab.store.hosts.commit(newer.lease, target('192.0.2.2'))).to.equal('committed');
    expect(await show()).to.deep.include({ counts: counts(1, 0, 0, 1) });
    expect((await show()).last).to.deep.include({ reply: 'good', userAgent: 'newer-client/1' });
  });

  it('a long User-Agent is kept to its first 200 characters', async () => {
    const long = 'x'.repeat(RECORDED_AGENT_MAX + 50);
    expect((await lab.store.hosts.admit(request('192.0.2.1', { guard: guard(sha1(HASH), long) }))).kind).to.equal(
      'change',
    );
    expect((await show()).last?.userAgent).to.equal('x'.repeat(RECORDED_AGENT_MAX));
  });

  it('when the hour turns, the last hour joins the earlier ones and hours older than a day are dropped', async () => {
    const [seconds] = await lab.raw.time();
    const hour = Math.floor((Number(seconds) * 1000) / HOUR_MS);
    // An hour ago: 2 good, 3 nochg; 10 hours ago: 1 failed; 30 hours ago: 7 nochg (out of the day).
    await lab.raw.hset(hostKey, HF.tallyHour, `${hour - 1}`, HF.tallyGood, '2', HF.tallyNochg, '3');
    await lab.raw.hset(hostKey, HF.tallyEarlier, `${hour - 30} 0 7 0 0,${hour - 10} 0 0 0 1`);
    await lab.raw.hset(hostKey, HF.ipv4, '192.0.2.1');
    expect((await lab.store.hosts.admit(request('192.0.2.1'))).kind).to.equal('nochg');
    expect(await lab.raw.hget(hostKey, HF.tallyEarlier)).to.equal(`${hour - 10} 0 0 0 1,${hour - 1} 2 3 0 0`);
    expect(
      await lab.raw.hmget(hostKey, HF.tallyHour, HF.tallyGood, HF.tallyNochg, HF.tallyRefused, HF.tallyFailed),
    ).to.deep.equal([`${hour}`, '0', '1', '0', '0']);
    // Within the hour, a request rewrites one count.
    expect((await lab.store.hosts.admit(request('192.0.2.1'))).kind).to.equal('nochg');
    expect(await lab.raw.hget(hostKey, HF.tallyNochg)).to.equal('2');
    expect((await show()).counts).to.deep.equal(counts(2, 5, 0, 1));
  });
});
