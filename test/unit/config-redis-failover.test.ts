/**
 * redis.sentinels, redis.sentinelName and redis.waitReplicas (docs/configuration.md, "Redis"): what the
 * loader accepts and refuses, and the client options createRedis derives from them.
 */
import { expect } from 'chai';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { closeRedis, createRedis, replicaWaitOf } from '../../src/store/redis.js';
import { configError as configErrorOf } from '../support/config-errors.js';
import { RecordingLogger } from '../support/store-server.js';

const zone = {
  name: 'dyn.example.org',
  primary: '127.0.0.1:53',
  key: { name: 'ddns-key', secret: Buffer.alloc(32, 7).toString('base64') },
};
const opts: ParseOptions = {
  env: {},
  baseDir: '/etc/ddns-bridge',
  readFile: () => 'a-redis-password\n',
};
const redisOf = (redis: Record<string, unknown>): Config['redis'] => parseConfig({ redis, zones: [zone] }, opts).redis;
const errorOf = (redis: Record<string, unknown>) => configErrorOf({ redis, zones: [zone] }, opts);

describe('config: redis.sentinels, sentinelName, waitReplicas', () => {
  it('sentinels as host:port (26379 when left out), with the group name', () => {
    const r = redisOf({ sentinels: ['10.0.0.21:26380', 'sentinel.example', '[::1]:26381'], sentinelName: 'ddns' });
    expect(r.sentinels).to.deep.equal([
      { host: '10.0.0.21', port: 26380 },
      { host: 'sentinel.example', port: 26379 },
      { host: '::1', port: 26381 },
    ]);
    expect(r.sentinelName).to.equal('ddns');
  });

  it('neither: no sentinel keys, waitReplicas off', () => {
    const r = redisOf({});
    expect(r).not.to.have.any.keys('sentinels', 'sentinelName', 'waitReplicas');
    expect(replicaWaitOf(r)).to.equal(undefined);
  });

  it('refuses one without the other, an empty or bad list, a duplicate, unix:// and rediss://', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ sentinelName: 'ddns' }, 'redis.sentinelName', /needs redis.sentinels/],
      [{ sentinels: ['127.0.0.1:26379'] }, 'redis.sentinelName', /required with redis.sentinels/],
      [{ sentinels: ['127.0.0.1:26379'], sentinelName: ' ' }, 'redis.sentinelName', /required/],
      [{ sentinels: [], sentinelName: 'ddns' }, 'redis.sentinels', /at least one/],
      [{ sentinels: '127.0.0.1:26379', sentinelName: 'ddns' }, 'redis.sentinels', /expected an array/],
      [{ sentinels: ['127.0.0.1:x'], sentinelName: 'ddns' }, 'redis.sentinels[0]', /host:port/],
      [{ sentinels: [26379], sentinelName: 'ddns' }, 'redis.sentinels[0]', /host:port/],
      [{ sentinels: ['a.example', 'a.example:26379'], sentinelName: 'ddns' }, 'redis.sentinels[1]', /listed twice/],
      [
        { url: 'unix:///run/redis/redis.sock?db=0', sentinels: ['127.0.0.1:26379'], sentinelName: 'ddns' },
        'redis.sentinels',
        /unix/,
      ],
      [
        { url: 'rediss://r.example:6380/0', sentinels: ['127.0.0.1:26379'], sentinelName: 'ddns' },
        'redis.sentinels',
        /TLS/,
      ],
    ];
    for (const [redis, key, message] of cases) {
      const err = errorOf(redis);
      expect(err.key, JSON.stringify(redis)).to.equal(key);
      expect(err.message, JSON.stringify(redis)).to.match(message);
    }
  });

  it('waitReplicas: an integer ≥ 0; WAIT gets half of commandTimeout', () => {
    expect(redisOf({ waitReplicas: 0 })).not.to.have.key('waitReplicas');
    const r = redisOf({ waitReplicas: 2, commandTimeout: 1.5 });
    expect(r.waitReplicas).to.equal(2);
    expect(replicaWaitOf(r)).to.deep.equal({ replicas: 2, timeoutMs: 750 });
    for (const bad of [-1, 1.5, '1']) expect(errorOf({ waitReplicas: bad }).key).to.equal('redis.waitReplicas');
  });

  it('the client asks the Sentinels for the master of the group, with the database and password of redis.url', async () => {
    const cfg = redisOf({
      url: 'redis://user:p%40ss@ignored.example:1/3',
      sentinels: ['127.0.0.1:1', '127.0.0.1:2'],
      sentinelName: 'ddns',
    });
    const redis = createRedis(cfg, new RecordingLogger());
    try {
      expect(redis.options).to.include({ name: 'ddns', role: 'master', db: 3, username: 'user', password: 'p@ss' });
      expect(redis.options.sentinels).to.deep.equal([
        { host: '127.0.0.1', port: 1 },
        { host: '127.0.0.1', port: 2 },
      ]);
      expect(
        redis.options.reconnectOnError?.(new Error('READONLY You can’t write against a read only replica.')),
      ).to.equal(true);
      expect(redis.options.reconnectOnError?.(new Error('ERR other'))).to.equal(false);
    } finally {
      await closeRedis(redis);
    }
  });

  it('a password from redis.passwordFile applies to the primary found through the Sentinels', async () => {
    const cfg = redisOf({ passwordFile: 'redis.pw', sentinels: ['127.0.0.1:1'], sentinelName: 'ddns' });
    const redis = createRedis(cfg, new RecordingLogger());
    try {
      expect(redis.options.password).to.equal('a-redis-password');
    } finally {
      await closeRedis(redis);
    }
  });
});
