/**
 * `addresses.refuse` through the running service (docs/protocol.md, "Address classes"): a refused `myip` item is
 * ignored as a malformed one is, the client's address of a refused class fills nothing, each counted, and what the
 * primary serves shows it.
 */
import { expect } from 'chai';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';

describe('address classes (knotd)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  const host = `ac.${ZONE}`;
  const get = (query: string) =>
    env.get(`/nic/update?hostname=${host}&${query}`, { auth: ['acuser', 'ac-password-1'] });

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({
      config: {
        addresses: { refuse: ['loopback', 'private', 'documentation'] },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
    });
    await env.addAccount('acuser', 'ac-password-1');
    await env.addHost(host, 'acuser');
  });
  after(async () => {
    await env?.stop();
  });

  it('a refused item is skipped for the next one of its family; a public address is published', async () => {
    expect((await get('myip=10.0.0.7,8.8.8.8')).body).to.equal('good 8.8.8.8\n');
    expect(await env.ns.query(host, 'A')).to.deep.equal(['8.8.8.8']);
  });

  it('every item refused and the client address (127.0.0.1) too: nothing changes, nochg without an address', async () => {
    const reply = await get('myip=192.168.1.1,192.0.2.1');
    expect(reply.status).to.equal(200);
    expect(reply.body).to.equal('nochg\n');
    expect(await env.ns.query(host, 'A')).to.deep.equal(['8.8.8.8']);
    expect((await env.hostJson(host)).ipv4).to.equal('8.8.8.8');
    // No myip at all: the client's own address (loopback) is refused as well.
    expect((await get('wildcard=NOCHG')).body).to.equal('nochg\n');
  });

  it('IPv6 of a refused class (2001:db8::/32) beside a public IPv4: only the IPv4 is taken', async () => {
    expect((await get('myip=9.9.9.9,2001:db8::1')).body).to.equal('good 9.9.9.9\n');
    expect(await env.ns.query(host, 'AAAA')).to.deep.equal([]);
  });
});
