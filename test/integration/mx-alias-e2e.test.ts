/**
 * mx= naming an alias (CNAME) through the running bridge: the alias does not count as
 * resolving, so the MX is deleted and the address is published. Before, BIND refused the
 * whole UPDATE (RFC 2181 §10.3) on every request and Knot published an MX at an alias.
 */
import { expect } from 'chai';
import { requireBinariesOrSkip, serverBinaries, type LabKind } from '../../src/lab/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';

const UA = 'mx-alias-test/1.0';

for (const kind of ['bind', 'knot', 'pdns'] as const satisfies readonly LabKind[]) {
  describe(`mx naming an alias, end to end (${kind})`, function () {
    this.timeout(60_000);
    let env: BridgeEnv | undefined;
    const auth: [string, string] = ['mia', 'mia-pw'];

    before(async function () {
      requireBinariesOrSkip(this, ['redis-server', ...serverBinaries(kind)]);
      env = await BridgeEnv.start({
        kind,
        records: [`mail.${ZONE}. 60 IN A 192.0.2.25`, `alias.${ZONE}. 60 IN CNAME mail.${ZONE}.`],
      });
      await env.addAccount(...auth);
    });

    after(async () => {
      await env?.stop();
    });

    it('the address is published (good), no MX at the alias', async () => {
      const h = `mxalias.${ZONE}`;
      await env!.addHost(h, auth[0]);
      const r = await env!.get(`/nic/update?hostname=${h}&myip=192.0.2.44&mx=alias.${ZONE}`, { auth, ua: UA });
      expect(r.body).to.equal('good 192.0.2.44\n');
      expect(await env!.ns.query(h, 'A')).to.deep.equal(['192.0.2.44']);
      expect(await env!.ns.query(h, 'MX')).to.deep.equal([]);
    });
  });
}
