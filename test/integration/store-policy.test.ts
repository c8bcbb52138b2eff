/** ClientPolicy (User-Agent block list, junk blocks), AgentAdmin and the echo gate on a real redis-server. */
import { expect } from 'chai';
import { AgentMatcher, agentMatches } from '../../src/core/agents.js';
import { silentLogger } from '../../src/core/log.js';
import { Keys, RedisClientPolicy, addressBucket, openStore, type StoreConfig } from '../../src/store/index.js';
import { storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 'pol:';
const PLACEHOLDER = 'Company - Device - Version Number';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('core/agents matcher (pure)', () => {
  it('matches exact strings case-sensitively', () => {
    expect(agentMatches(PLACEHOLDER, PLACEHOLDER)).to.equal(true);
    expect(agentMatches(PLACEHOLDER, PLACEHOLDER.toLowerCase())).to.equal(false);
    expect(agentMatches(PLACEHOLDER, `${PLACEHOLDER} `)).to.equal(false);
  });

  it('treats * as any run of characters and everything else literally', () => {
    expect(agentMatches('curl/*', 'curl/8.1.2')).to.equal(true);
    expect(agentMatches('curl/*', 'curl/')).to.equal(true);
    expect(agentMatches('curl/*', 'xcurl/8')).to.equal(false);
    expect(agentMatches('*bot*', 'Googlebot/2.1')).to.equal(true);
    expect(agentMatches('a.b(c)', 'a.b(c)')).to.equal(true);
    expect(agentMatches('a.b*', 'axb1')).to.equal(false);
    expect(agentMatches('[x]*', '[x]y')).to.equal(true);
    expect(agentMatches('a**b', 'ab')).to.equal(true);
    expect(agentMatches('x*', 'x\nnewline')).to.equal(true);
  });

  it('AgentMatcher combines exact entries and globs; empty patterns are ignored', () => {
    const m = new AgentMatcher([PLACEHOLDER, 'evil/*', '']);
    expect(m.size).to.equal(2);
    expect(m.matches(PLACEHOLDER)).to.equal(true);
    expect(m.matches('evil/1.0')).to.equal(true);
    expect(m.matches('ddclient/3.10.0')).to.equal(false);
    expect(m.matches('')).to.equal(false);
  });
});

describe('store keys (pure)', () => {
  it('buckets IPv6 addresses by /64 and leaves IPv4 alone', () => {
    expect(addressBucket('192.0.2.1')).to.equal('192.0.2.1');
    expect(addressBucket('2001:db8:1:2::a')).to.equal('2001:db8:1:2::/64');
    expect(addressBucket('2001:0DB8:0001:0002:ffff:0:0:1')).to.equal('2001:db8:1:2::/64');
    expect(addressBucket('::1')).to.equal('0:0:0:0::/64');
    expect(addressBucket('::ffff:192.0.2.1')).to.equal('0:0:0:0::/64');
  });

  it('spells keys with the prefix, and a hash of the User-Agent', () => {
    const k = new Keys('p*:');
    expect(k.host('a.example.org')).to.equal('p*:h:a.example.org');
    expect(k.hostScanPattern()).to.equal('p\\*:h:*');
    expect(k.junkBlock('192.0.2.1', 'x'.repeat(5000))).to.match(/^p\*:jb:192\.0\.2\.1:[0-9a-f]{16}$/);
    expect(k.fqdnOfHostKey('p*:h:a.example.org')).to.equal('a.example.org');
    expect(k.fqdnOfHostKey('p*:a:alice')).to.equal(undefined);
  });
});

describe('store: client policy and echo gate (real redis-server)', function () {
  const cfg = (url: string): StoreConfig =>
    storeTestConfig(url, {
      keyPrefix: PREFIX,
      blocked: [PLACEHOLDER, 'BadClient/*'],
      junk: { windowMs: 800, blockMs: 400 },
    });
  const lab = useRedisStore('store-policy', cfg);

  beforeEach(() => lab.raw.flushdb());

  describe('User-Agent block list', () => {
    it('blocks the configured exact strings and globs, nothing else', async () => {
      const p = lab.store.clientPolicy;
      expect(await p.isBlocked(PLACEHOLDER, '192.0.2.1')).to.equal(true);
      expect(await p.isBlocked('BadClient/2.0', '192.0.2.1')).to.equal(true);
      expect(await p.isBlocked('ddclient/3.10.0', '192.0.2.1')).to.equal(false);
      expect(await p.isBlocked('inadyn/2.10.0', '192.0.2.1')).to.equal(false);
    });

    it('agent block / unblock via Redis takes effect once the cached list is older than its lifetime', async () => {
      let now = 1_000_000;
      const c = cfg(lab.url);
      const policy = new RedisClientPolicy(lab.store.redis, lab.store.keys, {
        agents: c.agents,
        junk: c.junk,
        clock: () => now,
      });
      expect(await policy.isBlocked('Scanner/1.0', '192.0.2.1')).to.equal(false); // list fetched (empty)
      expect(await lab.store.agents.block('Scanner/*')).to.equal(true);
      expect(await lab.store.agents.block('Scanner/*')).to.equal(false);
      expect(await lab.store.agents.list()).to.deep.equal(['Scanner/*']);
      now += 1999;
      expect(await policy.isBlocked('Scanner/1.0', '192.0.2.1')).to.equal(false); // still cached
      now += 1;
      expect(await policy.isBlocked('Scanner/1.0', '192.0.2.1')).to.equal(true);
      expect(await lab.store.agents.unblock('Scanner/*')).to.equal(true);
      expect(await lab.store.agents.unblock('Scanner/*')).to.equal(false);
      now += 2000;
      expect(await policy.isBlocked('Scanner/1.0', '192.0.2.1')).to.equal(false);
      expect(await lab.store.agents.list()).to.deep.equal([]);
    });

    it('the block list is shared by frontends: another client sees a CLI block within 2 s', async () => {
      const other = openStore(cfg(lab.url), silentLogger);
      try {
        expect(await other.clientPolicy.isBlocked('Shared/1', '192.0.2.1')).to.equal(false);
        await lab.store.agents.block('Shared/1');
        const started = Date.now();
        while (!(await other.clientPolicy.isBlocked('Shared/1', '192.0.2.1'))) {
          expect(Date.now() - started).to.be.below(2500);
          await sleep(100);
        }
      } finally {
        await other.close();
      }
    });
  });

  describe('junk blocking', () => {
    it('the threshold-th junk request blocks that (address, agent) pair for blockMs', async () => {
      const p = lab.store.clientPolicy;
      const ua = 'curl/8.1.2';
      await p.recordJunk(ua, '192.0.2.1');
      await p.recordJunk(ua, '192.0.2.1');
      expect(await p.isBlocked(ua, '192.0.2.1')).to.equal(false);
      await p.recordJunk(ua, '192.0.2.1');
      expect(await p.isBlocked(ua, '192.0.2.1')).to.equal(true);
      expect(await p.isBlocked('curl/8.1.3', '192.0.2.1')).to.equal(false);
      expect(await p.isBlocked(ua, '192.0.2.2')).to.equal(false);
      const blockKey = lab.store.keys.junkBlock('192.0.2.1', ua);
      expect(await lab.raw.pttl(blockKey)).to.be.within(1, 400);
      await sleep(450);
      expect(await p.isBlocked(ua, '192.0.2.1')).to.equal(false);
    });

    it('junk outside the window does not add up; counters carry a TTL', async () => {
      const p = lab.store.clientPolicy;
      await p.recordJunk('x/1', '192.0.2.3');
      await p.recordJunk('x/1', '192.0.2.3');
      expect(await lab.raw.pttl(lab.store.keys.junkCount('192.0.2.3', 'x/1'))).to.be.within(1, 800);
      await sleep(850);
      await p.recordJunk('x/1', '192.0.2.3');
      expect(await p.isBlocked('x/1', '192.0.2.3')).to.equal(false);
    });

    it('IPv6 pairs are blocked per /64', async () => {
      const p = lab.store.clientPolicy;
      for (const ip of ['2001:db8:5::1', '2001:db8:5::2', '2001:db8:5:0:1::3']) await p.recordJunk('y/1', ip);
      expect(await p.isBlocked('y/1', '2001:db8:5::99')).to.equal(true);
      expect(await p.isBlocked('y/1', '2001:db8:6::1')).to.equal(false);
    });
  });

  describe('echo gate', () => {
    it('serves three frequent requests, the fourth starts the cool-down, which ends', async () => {
      const g = lab.store.echoGate;
      const verdicts: string[] = [];
      for (let i = 0; i < 6; i++) verdicts.push(await g.admit('192.0.2.10', 60_000, 3, 400));
      expect(verdicts).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'abuse', 'abuse']);
      expect(await g.admit('192.0.2.11', 60_000, 3, 400)).to.equal('ok');
      const key = lab.store.keys.echo('192.0.2.10');
      expect(await lab.raw.pttl(key)).to.be.within(1, 60_000);
      await sleep(450);
      expect(await g.admit('192.0.2.10', 60_000, 3, 400)).to.equal('ok');
    });

    it('a request past the interval resets the run; entries expire with the interval', async () => {
      const g = lab.store.echoGate;
      for (let i = 0; i < 4; i++) expect(await g.admit('192.0.2.12', 200, 3, 10_000)).to.equal('ok');
      await sleep(250);
      expect(await lab.raw.exists(lab.store.keys.echo('192.0.2.12'))).to.equal(0);
      for (let i = 0; i < 4; i++) expect(await g.admit('192.0.2.12', 200, 3, 10_000)).to.equal('ok');
      expect(await g.admit('192.0.2.12', 200, 3, 10_000)).to.equal('abuse');
    });

    it('counts exactly under concurrency from two clients', async () => {
      const other = openStore(cfg(lab.url), silentLogger);
      try {
        const verdicts = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            (i % 2 ? lab.store : other).echoGate.admit('192.0.2.13', 60_000, 3, 5000),
          ),
        );
        expect(verdicts.filter((v) => v === 'ok')).to.have.length(4);
        expect(verdicts.filter((v) => v === 'abuse')).to.have.length(36);
      } finally {
        await other.close();
      }
    });
  });
});
