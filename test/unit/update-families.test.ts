/** A dialect's keep and remove per address family (UpdateRequest.families; docs/protocol.md, "Dialects"). */
import { expect } from 'chai';
import { requestedAddresses } from '../../src/app/update.js';
import { parseUpdateParams } from '../../src/core/params.js';

const params = (query: string) => parseUpdateParams(new Map([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])));

describe('update: families a dialect keeps or removes', () => {
  it('without: the named addresses, else the client address fills its family (the seed)', () => {
    expect(requestedAddresses(params('myip=192.0.2.1'), '198.51.100.1')).to.deep.equal({ ipv4: '192.0.2.1' });
    expect(requestedAddresses(params(''), '198.51.100.1')).to.deep.equal({ ipv4: '198.51.100.1' });
  });

  it('keep or remove: that family takes no address, and the client address fills nothing', () => {
    expect(requestedAddresses(params('myip=192.0.2.1,2001:db8::1'), '198.51.100.1', { ipv4: 'keep' })).to.deep.equal({
      ipv6: '2001:db8::1',
    });
    expect(requestedAddresses(params(''), '198.51.100.1', { ipv4: 'keep' })).to.deep.equal({});
    expect(requestedAddresses(params(''), '2001:db8::9', { ipv4: 'remove' })).to.deep.equal({});
    expect(requestedAddresses(params('myip=2001:db8::1'), '198.51.100.1', { ipv4: 'remove' })).to.deep.equal({
      ipv6: '2001:db8::1',
    });
  });
});
