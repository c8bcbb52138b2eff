/**
 * "ERR max number of clients reached" met on a reconnect is filed by ioredis under the
 * connect-time SELECT (the first command when redis.url names a database other than 0). It is
 * transient: serve must reconnect, not give up as for a database the server does not have.
 */
import { expect } from 'chai';
import { chmod, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { BridgeEnv, deepMerge, sleep } from '../support/bridge.js';

describe('redis.url /1: a moment of maxclients on a reconnect is transient, not fatal', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let admin: Redis;
  before(async () => {
    env = await BridgeEnv.start({ kind: 'knot', serves: 0 });
    const db1 = deepMerge(env.config, { redis: { url: env.redis.url.replace(/\/\d*$/, '/1') } });
    await writeFile(env.configPath, JSON.stringify(db1, null, 2));
    await chmod(env.configPath, 0o600);
    admin = new Redis(env.redis.url);
    await admin.ping();
  });
  after(async () => {
    await admin.config('SET', 'maxclients', '10000').catch(() => undefined);
    admin.disconnect();
    await env.stop();
  });

  it('serve survives a moment of maxclients during a reconnect', async () => {
    await env.startServe();
    const serve = env.serves[0]!;
    const list = String(await admin.client('LIST'));
    const n = list.trim().split('\n').length;
    void n; await admin.config('SET', 'maxclients', '1');
    const mark = env.logs.length;
    // The serve's connection drops (a network blip, a CLIENT KILL, a timeout...).
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await sleep(1500);
    // The slot comes back.
    await admin.config('SET', 'maxclients', '10000');
    await sleep(2000);
    console.log(env.logs.slice(mark).join('').trim().split('\n').filter((l) => /redis|stop/.test(l)).join('\n'));
    console.log('serve exitCode:', serve.exitCode);
    expect(serve.exitCode, 'serve still running').to.equal(null);
  });
});
