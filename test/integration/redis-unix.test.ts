/**
 * Redis on the same machine over its Unix socket (`redis.url: unix:///…/redis.sock?db=0`):
 * serve and the CLI work through it, and the bridge's connection really is the socket.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, expectedReply } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const UA = 'redis-unix-tests/1.0 tests@example.test';
const OK = (body: string) => expectedReply(200, 'OK', body);

describe('Redis over a Unix socket', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let admin: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', redisOverUnixSocket: true });
    admin = new Redis(env.redis.url);
  });
  after(async () => {
    admin?.disconnect();
    await env?.stop();
  });

  it('the CLI and serve use the socket: good, the record on the primary, nochg, the state in Redis', async () => {
    expect(env.config)
      .to.have.nested.property('redis.url')
      .that.matches(/^unix:\/\/\/.+\.sock\?db=0$/);
    await env.addAccount('ulla', 'ulla-secret-pw');
    const host = `unix-${process.pid}.${ZONE}`;
    await env.addHost(host, 'ulla');

    const first = await env.get(`/nic/update?hostname=${host}&myip=198.51.100.20`, {
      auth: ['ulla', 'ulla-secret-pw'],
      ua: UA,
    });
    expect(first.raw.toString()).to.equal(OK('good 198.51.100.20\n'));
    expect(await env.ns.query(host, 'A')).to.deep.equal(['198.51.100.20']);
    const again = await env.get(`/nic/update?hostname=${host}&myip=198.51.100.20`, {
      auth: ['ulla', 'ulla-secret-pw'],
      ua: UA,
    });
    expect(again.raw.toString()).to.equal(OK('nochg 198.51.100.20\n'));
    expect(await env.hostJson(host)).to.include({ ipv4: '198.51.100.20', state: 'active' });

    // The serve process's connection (named ddns-bridge) comes over the socket, not TCP.
    const clients = (await admin.client('LIST')) as string;
    const bridge = clients.split('\n').filter((l) => / name=ddns-bridge /.test(l));
    expect(bridge, clients).to.have.length.at.least(1);
    for (const line of bridge) expect(line, line).to.match(/ addr=\/[^ ]+\.sock:0 /);
  });
});
