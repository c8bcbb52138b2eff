/**
 * The credential-guessing throttle (docs/protocol.md, "Clients that misbehave") against a real `serve` process and
 * redis-server: a burst of concurrent wrong guesses from one source must not get more password checks than the
 * cool-down allows, so the right password sent behind them is refused (badauth).
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { DEFAULT_SCRYPT_COST } from '../../src/auth/index.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/index.js';
import { BridgeEnv, expectedReply, sleep, ZONE } from '../support/bridge.js';

const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);
const KEYS = new Keys('ddns:');
const MAX_FAILURES = 3;
const BURST = 8;

/** How many HGETALL (the login lookup reads the account with one) Redis has served. */
async function hgetallCalls(raw: Redis): Promise<number> {
  const stats = await raw.info('commandstats');
  return Number(/^cmdstat_hgetall:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
}

describe('credential-guessing throttle under a burst of concurrent guesses (real serve + redis)', function () {
  this.timeout(60000);
  let env: BridgeEnv | undefined;
  let raw: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd']);
    env = await BridgeEnv.start({ config: { credentials: { maxFailures: MAX_FAILURES } } });
    raw = new Redis(env.redis.url, { lazyConnect: true });
    await raw.connect();
  });
  after(async () => {
    raw?.disconnect();
    await env?.stop();
  });

  it(`${BURST} wrong guesses at once, then the right password from the same source: badauth for the right one too`, async () => {
    const e = env!;
    const host = `victim1.${ZONE}`;
    // At account add's own cost: the guesses must still hold both hash slots when the right password comes.
    await e.addAccount('victim', 'Correct-Horse-42', false, DEFAULT_SCRYPT_COST);
    await e.addHost(host, 'victim');
    const update = (password: string, ua: string) =>
      e.get(`/nic/update?hostname=${host}&myip=192.0.2.9`, { auth: ['victim', password], ua });

    const hostBefore = await e.hostJson(host);
    // A distinct User-Agent per request keeps the junk rule out of it.
    const before = await hgetallCalls(raw);
    const guesses = Array.from({ length: BURST }, (_, i) => update(`guess-${i}`, `guess/${i}`));
    // Send the right password once every guess has passed its login lookup (no cool-down
    // yet): it queues for a hash slot behind them, which is where the throttle was bypassed.
    while ((await hgetallCalls(raw)) < before + BURST) await sleep(2);
    const right = await update('Correct-Horse-42', 'right/1');

    expect(right.raw.toString()).to.equal(BADAUTH);
    for (const r of await Promise.all(guesses)) expect(r.raw.toString()).to.equal(BADAUTH);
    // The cool-down started for the source and the account; nothing was published or stored.
    expect(await raw.exists(KEYS.cooldownBySource('127.0.0.1'))).to.equal(1);
    expect(await raw.exists(KEYS.cooldownByAccount('victim'))).to.equal(1);
    expect(await e.hostJson(host)).to.deep.equal(hostBefore);
    expect(hostBefore).to.include({ ipv4: null });
    expect(await e.ns.query(host, 'A')).to.deep.equal([]);

    // And sequentially, as before: still refused during the cool-down.
    expect((await update('Correct-Horse-42', 'right/2')).raw.toString()).to.equal(BADAUTH);
  });
});
