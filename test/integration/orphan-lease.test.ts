/**
 * A stalled Redis (SIGSTOP) runs what it buffered once it resumes (SIGCONT): the admission of a request answered
 * `911` meanwhile takes the host's lease for nobody. The bridge ends that lease once Redis answers (src/store/
 * abandon.ts), so the first retry is served at once instead of waiting MAX_BUSY_WAIT_MS for `911` again.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { MAX_BUSY_WAIT_MS } from '../../src/app/update.js';
import { redisPing, requireBinariesOrSkip } from '../../src/lab/index.js';
import { LEASE_FIELDS } from '../../src/store/keys.js';
import { BridgeEnv, expectedReply, normalizeRetryAfter, RETRY_LATER, sleep } from '../support/bridge.js';

const UA = 'orphan-lease-tests/1.0 tests@example.test';
const PASSWORD = 'stall-Secret-1';
const OK = (body: string) => expectedReply(200, 'OK', body);

describe('a Redis stall: a request answered 911 leaves no lease behind (knot, SIGSTOP/SIGCONT)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let fqdn: string;
  let raw: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    // A short command timeout: the stalled request's 911 comes after 1 s.
    env = await BridgeEnv.start({ kind: 'knot', config: { redis: { commandTimeout: 1 } } });
    fqdn = `stall.${env.ns.zone}`;
    await env.addAccount('stall', PASSWORD);
    await env.addHost(fqdn, 'stall');
    raw = new Redis(env.redis.url, { maxRetriesPerRequest: 1 });
  });
  after(async () => {
    if (env?.redis.pid !== undefined) process.kill(env.redis.pid, 'SIGCONT');
    raw?.disconnect();
    await env?.stop();
  });

  const update = (ip: string) =>
    env.get(`/nic/update?hostname=${fqdn}&myip=${ip}`, { auth: ['stall', PASSWORD], ua: UA });

  it('the first retry once Redis answers PING again is good, well within the busy wait; no lease is left', async () => {
    // Verified once (the login is cached): the next request's only Redis call is its admission.
    expect((await update('192.0.2.10')).raw.toString()).to.equal(OK('good 192.0.2.10\n'));

    const pid = env.redis.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      const stalled = await update('192.0.2.11');
      expect(normalizeRetryAfter(stalled.raw.toString()), 'answered while Redis is stopped').to.equal(
        expectedReply(200, 'OK', '911\n', [RETRY_LATER]),
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const resumed = Date.now();
    while (!(await redisPing(env.redis.host, env.redis.port, 200))) {
      expect(Date.now() - resumed, 'Redis answers PING after SIGCONT').to.be.below(10_000);
      await sleep(10);
    }

    const started = Date.now();
    const retry = await update('192.0.2.11');
    const took = Date.now() - started;
    expect(retry.raw.toString()).to.equal(OK('good 192.0.2.11\n'));
    expect(took, `the retry took ${took} ms`).to.be.below(MAX_BUSY_WAIT_MS / 2);

    const hash = await raw.hgetall(`ddns:h:${fqdn}`);
    for (const f of LEASE_FIELDS) expect(hash[f], `lease field ${f}`).to.equal(undefined);
    expect(hash['4']).to.equal('192.0.2.11');
    expect(await raw.zscore('ddns:pending', `ddns:h:${fqdn}`), 'in the pending set').to.equal(null);
    expect(await env.ns.query(fqdn, 'A')).to.deep.equal(['192.0.2.11']);
  });
});
