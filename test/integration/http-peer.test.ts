/**
 * The detected client address when the peer is gone: a client that resets its connection
 * right after sending an update without `myip` must not get any address published (once it
 * was 0.0.0.0, the fallback for a peer address that could no longer be read).
 */
import { expect } from 'chai';
import net from 'node:net';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, sleep } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const AUTH: [string, string] = ['rita', 'rita-pw'];
const UA = 'reset-test/1.0';
const TRIES = 20;

/** Connect, send `request`, and reset (RST) the connection as soon as it is written. */
function sendAndReset(port: number, request: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () =>
      socket.write(request, () => (socket.resetAndDestroy(), resolve())),
    );
    socket.on('error', () => resolve());
  });
}

/** Every key and value in Redis, as text (to look for an address anywhere in the store). */
async function dumpRedis(url: string): Promise<string> {
  const redis = new Redis(url);
  try {
    const out: string[] = [];
    for (const key of (await redis.keys('*')).sort()) {
      const type = await redis.type(key);
      const value =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'set'
              ? await redis.smembers(key)
              : type === 'zset'
                ? await redis.zrange(key, 0, -1, 'WITHSCORES')
                : type === 'list'
                  ? await redis.lrange(key, 0, -1)
                  : type === 'stream'
                    ? await redis.xrange(key, '-', '+')
                    : type;
      out.push(`${key} ${JSON.stringify(value)}`);
    }
    return out.join('\n');
  } finally {
    redis.disconnect();
  }
}

describe('a client that resets its connection right after its request (knot)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  const host = `reset-${process.pid}.${ZONE}`;
  const authHeader = `Authorization: Basic ${Buffer.from(AUTH.join(':')).toString('base64')}`;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    // No frequency rule in the way: every request that got through would be applied.
    env = await BridgeEnv.start({ kind: 'knot', config: { frequency: { minInterval: 0.001 } } });
    await env.addAccount(...AUTH);
    await env.addHost(host, AUTH[0]);
    // The host already holds the peer's address: a reset request whose peer address was read
    // in time is a `nochg` (no DNS traffic), so any change at all is a wrong address.
    const r = await env.get(`/nic/update?hostname=${host}`, { auth: AUTH, ua: UA });
    expect(r.body).to.equal('good 127.0.0.1\n');
  });
  after(async () => env?.stop());

  const hostState = async () => {
    const { ipv4, ipv6, addresses, state, wildcard, mx } = await env.hostJson(host);
    return { ipv4, ipv6, addresses, state, wildcard, mx };
  };

  it(`${TRIES} GET and POST updates without myip, each reset after sending: nothing published, the host unchanged`, async () => {
    const before = await hostState();
    expect(before).to.include({ ipv4: '127.0.0.1', state: 'active' });
    const serialBefore = await env.ns.serial();
    const body = `hostname=${host}`;
    const requests = [
      [`GET /nic/update?${body} HTTP/1.1`, 'Host: x', `User-Agent: ${UA}`, authHeader, '', ''].join('\r\n'),
      [
        'POST /nic/update HTTP/1.1',
        'Host: x',
        `User-Agent: ${UA}`,
        authHeader,
        'Content-Type: application/x-www-form-urlencoded',
        `Content-Length: ${body.length}`,
        '',
        body,
      ].join('\r\n'),
    ];
    for (let i = 0; i < TRIES; i++) await sendAndReset(env.port, requests[i % 2]!);
    // Let whatever got through reach Redis and the primary before looking (not an assertion on time).
    await sleep(1000);

    const store = await dumpRedis(env.redis.url);
    expect(store).to.not.include('0.0.0.0');
    expect(await hostState()).to.deep.equal(before);
    expect(await env.ns.query(host, 'A')).to.deep.equal(['127.0.0.1']);
    expect(await env.ns.serial()).to.equal(serialBefore);
    expect(env.serves[0]!.exitCode).to.equal(null);
    // The same request over a connection that stays is still served with its peer address.
    const r = await env.get(`/nic/update?hostname=${host}`, { auth: AUTH, ua: UA });
    expect(r.body).to.equal('nochg 127.0.0.1\n');
    // How many tries hit the window is up to the kernel (reported, not asserted): the case itself,
    // a connection whose peer address is unknown, is forced in test/unit/http.test.ts.
    const unread = (env.logs.join('').match(/before its peer address was read/g) ?? []).length;
    console.log(`      ${unread} of ${TRIES} connections were reset before their peer address was read`);
  });
});
