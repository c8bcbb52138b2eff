/**
 * A Redis with no free client slot while serve reconnects (redis.url naming database 1): the
 * reconnects are refused, serve keeps running, and once a slot is free it is back on Redis and
 * answers into database 1. On loopback the refusal mostly arrives as a closed connection; which
 * command ioredis files the "max number of clients" reply under when it does arrive is a matter
 * of timing — that it never ends the client, even filed under the SELECT, is
 * test/unit/redis-select-errors.test.ts.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BridgeEnv, sleep } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { expectUpdateInDatabase1 } from '../support/database-one.js';

const UA = 'redis-maxclients-tests/1.0 tests@example.test';

describe('redis.url /1: a moment of maxclients on a reconnect is transient, not fatal', function () {
  this.timeout(60000);
  let env: BridgeEnv | undefined;
  let admin: Redis | undefined;
  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', serves: 0 });
    await env.writeConfig({ redis: { url: env.redis.url.replace(/\/\d*$/, '/1') } });
    admin = new Redis(env.redis.url);
    await admin.ping();
  });
  after(async () => {
    await admin?.config('SET', 'maxclients', '10000').catch(() => undefined);
    admin?.disconnect();
    await env?.stop();
  });

  it('serve meets maxclients on its reconnect, keeps running, and once a slot is free answers good into database 1', async () => {
    const e = env!;
    await e.startServe();
    const serve = e.serves[0]!;
    const mark = e.logs.length;
    const since = () => e.logs.slice(mark).join('');
    const rejectedBefore = await rejectedConnections(admin!);
    await admin!.config('SET', 'maxclients', '1');
    // The serve's connection drops (a network blip, a CLIENT KILL, a timeout...); its reconnect finds no free slot.
    await admin!.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    for (let i = 0; i < 100 && (await rejectedConnections(admin!)) < rejectedBefore + 2; i++) await sleep(50);
    // Redis counts each connection it refused for maxclients: the serve's reconnects met it, more than once.
    expect(await rejectedConnections(admin!), 'reconnects refused for maxclients').to.be.at.least(rejectedBefore + 2);
    expect(since(), 'the lost connection is reported').to.include('redis connection lost');

    // The slot comes back.
    await admin!.config('SET', 'maxclients', '10000');
    for (let i = 0; i < 150 && !since().includes('redis available again'); i++) await sleep(100);
    expect(since(), 'serve is back on Redis').to.include('redis available again');
    expect(serve.exitCode, 'serve still running').to.equal(null);
    expect(serve.signalCode).to.equal(null);

    await expectUpdateInDatabase1(e, 'maxclients', '192.0.2.9', UA);
  });
});

/** INFO stats rejected_connections: connections Redis refused because maxclients was reached. */
async function rejectedConnections(redis: Redis): Promise<number> {
  const m = /rejected_connections:(\d+)/.exec(await redis.info('stats'));
  return Number(m![1]);
}
