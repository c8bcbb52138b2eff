/** Redis outages: every adapter fails fast with StoreUnavailableError, and recovers by itself. */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { freePort } from '../../src/lab/index.js';
import { openStore, type StoreConfig } from '../../src/store/index.js';
import { RecordingLogger, storeTestConfig, useRedisStore } from '../support/store-server.js';
import { waitFor } from '../support/wait.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function config(url: string, commandTimeoutMs = 500): StoreConfig {
  return storeTestConfig(url, { keyPrefix: 'out:', commandTimeoutMs });
}

/** Resolves to how long the call took and what it threw. */
async function timed(fn: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = Date.now();
  try {
    await fn();
    return { ms: Date.now() - started, error: undefined };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}

const REQUEST = {
  fqdn: 'home.dyn.example.org',
  account: 'alice',
  minIntervalMs: 60_000,
  maxFrequent: 3,
  expect: null,
  leaseMs: 5000,
};

describe('store: Redis outages (real redis-server)', function () {
  const logger = new RecordingLogger();
  // No plain client: the tests reach Redis through the store (and a blocker of their own).
  const lab = useRedisStore('store-outage', config, { logger, raw: false });

  before(async () => {
    await lab.store.accounts.create({ name: 'alice', passwordHash: 'h', donator: false, createdAt: 1 });
    await lab.store.hosts.add('home.dyn.example.org', 'alice', 'dynamic');
  });

  it('fails every adapter fast while redis-server is down, logs once, and recovers after start()', async () => {
    expect((await lab.store.hosts.admit(REQUEST)).kind).to.equal('nochg');
    let reconnects = 0;
    const counted = () => reconnects++;
    lab.store.redis.on('reconnecting', counted);
    await lab.server.stop();
    const calls: [string, () => Promise<unknown>][] = [
      ['admit', () => lab.store.hosts.admit(REQUEST)],
      ['accounts.get', () => lab.store.accounts.get('alice')],
      ['getForLogin', () => lab.store.accounts.getForLogin('alice', '192.0.2.1')],
      ['isThrottled', () => lab.store.failures.isThrottled('192.0.2.1', 'alice')],
      ['recordFailure', () => lab.store.failures.recordFailure('192.0.2.1', 'alice')],
      ['isBlocked', () => lab.store.clientPolicy.isBlocked('ddclient/3.10.0', '192.0.2.1')],
      ['recordJunk', () => lab.store.clientPolicy.recordJunk('ddclient/3.10.0', '192.0.2.1')],
      ['echo', () => lab.store.echoGate.admit('192.0.2.1', 60_000, 3, 1000)],
      ['hosts.list', () => lab.store.hosts.list()],
      ['ping', () => lab.store.ping()],
    ];
    // Twice: right after the stop, and again while reconnect attempts keep failing.
    for (const round of [0, 1]) {
      for (const [name, call] of calls) {
        const { ms, error } = await timed(call);
        expect(error, `${name} (round ${round})`).to.be.instanceOf(StoreUnavailableError);
        expect(ms, `${name} took ${ms} ms`).to.be.below(1000);
      }
      // Each 'reconnecting' after the first follows a failed attempt: two more have failed.
      const before = reconnects;
      await waitFor(() => reconnects >= before + 2, { what: 'two more failed reconnect attempts', timeoutMs: 5000 });
    }
    lab.store.redis.off('reconnecting', counted);
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors, JSON.stringify(errors)).to.have.length(1);

    await lab.server.start();
    const started = Date.now();
    for (;;) {
      const { error } = await timed(() => lab.store.ping());
      if (error === undefined) break;
      expect(Date.now() - started, 'recovery after start()').to.be.below(5000);
      await sleep(100);
    }
    expect(logger.lines.some((l) => l.level === 'info' && /available again/.test(l.msg))).to.equal(true);
    // A restarted server has no scripts cached: these script calls work only because
    // EVALSHA falls back to EVAL.
    await lab.store.redis.flushdb();
    await lab.store.accounts.create({ name: 'alice', passwordHash: 'h', donator: false, createdAt: 1 });
    await lab.store.hosts.add('home.dyn.example.org', 'alice', 'dynamic');
    expect((await lab.store.hosts.admit(REQUEST)).kind).to.equal('nochg');
    expect(await lab.store.redis.hget('out:h:home.dyn.example.org', 'fs')).to.equal('1');
  });

  it('a command that gets no answer fails after commandTimeoutMs', async () => {
    const blocker = new Redis(lab.url);
    try {
      // A busy script blocks the whole server for ~1.5 s (Redis answers nobody meanwhile).
      const busy = blocker
        .eval(
          "local t = redis.call('TIME'); local stop = t[1] * 1000000 + t[2] + 1500000; " +
            "while true do local n = redis.call('TIME'); if n[1] * 1000000 + n[2] > stop then break end end; return 1",
          0,
        )
        .catch(() => undefined);
      await sleep(100); // for the script to start (a busy Redis answers no one: nothing to poll)
      const { ms, error } = await timed(() => lab.store.accounts.get('alice'));
      expect(error).to.be.instanceOf(StoreUnavailableError);
      expect(ms).to.be.within(400, 1000);
      await busy;
    } finally {
      blocker.disconnect();
    }
    // Afterwards the same client works again.
    await lab.store.ping();
  });

  it('fails within a second when Redis was never reachable (no endless offline queue)', async () => {
    const port = await freePort();
    const silent = new RecordingLogger();
    const lonely = openStore(config(`redis://127.0.0.1:${port}/0`, 2000), silent);
    try {
      const { ms, error } = await timed(() => lonely.accounts.get('alice'));
      expect(error).to.be.instanceOf(StoreUnavailableError);
      expect(ms).to.be.below(1000);
      expect(String((error as Error).message)).to.not.match(/password/i);
    } finally {
      await lonely.close();
    }
  });

  it('never logs the password of a redis URL', async () => {
    const port = await freePort();
    const log = new RecordingLogger();
    const s = openStore(config(`redis://:hunter2-secret@127.0.0.1:${port}/0`), log);
    let reconnects = 0;
    s.redis.on('reconnecting', () => reconnects++);
    try {
      await timed(() => s.ping());
      // What it logs about the failing connection, and about attempts to reconnect.
      await waitFor(() => log.lines.length > 0 && reconnects >= 2, { what: 'a log line and failed reconnects' });
    } finally {
      await s.close();
    }
    expect(log.lines.length).to.be.above(0);
    expect(JSON.stringify(log.lines)).to.not.include('hunter2');
  });
});
