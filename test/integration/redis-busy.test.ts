/**
 * A Redis busy with another client's long script answers the connect-time SELECT with a
 * transient -BUSY: serve must wait it out like a Redis that is down (not exit, and not go on
 * in database 0), then work in the configured database.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BridgeEnv, sleep } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { expectUpdateInDatabase1 } from '../support/database-one.js';

const UA = 'redis-busy-tests/1.0 tests@example.test';

describe('redis.url /1: a transient BUSY reply to SELECT (another client running a long script)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let blocker: Redis | undefined;
  let admin: Redis | undefined;
  let script: Promise<unknown> | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', serves: 0 });
    await env.writeConfig({ redis: { url: env.redis.url.replace(/\/\d*$/, '/1') } });
    admin = new Redis(env.redis.url); // database 0
    blocker = new Redis(env.redis.url);
    await Promise.all([admin.ping(), blocker.ping()]);
    // Other clients get -BUSY once a script has run 100 ms.
    await admin.config('SET', 'busy-reply-threshold', '100');
  });
  after(async () => {
    // Never leave the script running (SCRIPT KILL fails harmlessly when none runs).
    await admin?.script('KILL').catch(() => undefined);
    await script;
    blocker?.disconnect();
    admin?.disconnect();
    await env?.stop();
  });

  it('serve keeps running; once the script ends an update is answered good and lands in database 1 (database 0 empty)', async () => {
    // A read-only script that runs until it is killed.
    script = blocker!.eval('local i = 0 while true do i = i + 1 end', 0).catch((err: Error) => err);
    let busy = '';
    for (let i = 0; i < 100 && !busy; i++) {
      busy = await admin!.ping().then(
        () => '',
        (err: Error) => err.message,
      );
      if (!busy) await sleep(50);
    }
    expect(busy, 'Redis answers BUSY').to.match(/^BUSY/);

    const mark = env.logs.length;
    const started = env.startServe();
    started.catch(() => undefined);
    // The serve's SELECT was refused with BUSY (it says so, whichever way it takes it).
    for (let i = 0; i < 150 && !/BUSY/.test(env.logs.slice(mark).join('')); i++) await sleep(100);
    expect(env.logs.slice(mark).join(''), 'serve met the BUSY reply').to.match(/BUSY/);

    // The script ends.
    await admin!.script('KILL');
    expect(String(await script)).to.match(/killed/i);
    await started; // listening: it did not exit
    for (let i = 0; i < 150 && !env.logs.slice(mark).join('').includes('redis available again'); i++) await sleep(100);
    expect(env.logs.slice(mark).join(''), 'serve is back on Redis').to.include('redis available again');
    const serve = env.serves[0]!;
    expect(serve.exitCode, 'serve still running').to.equal(null);
    expect(serve.signalCode).to.equal(null);

    await expectUpdateInDatabase1(env, 'busy', '192.0.2.7', UA);
    expect(serve.exitCode, 'serve still running').to.equal(null);
  });
});
