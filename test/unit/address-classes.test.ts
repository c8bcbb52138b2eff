/** `addresses.refuse` (docs/protocol.md, "Address classes"): the classes, and the update path leaving them out. */
import { expect } from 'chai';
import { ADDRESS_CLASSES, refusedClass } from '../../src/core/address-classes.js';
import { parseConfig } from '../../src/config/load.js';
import { configError, parseOptions } from '../support/config-errors.js';

const zones = [
  {
    name: 'dyn.example.org',
    primary: '127.0.0.1:53',
    key: { name: 'k', secret: Buffer.alloc(32, 1).toString('base64') },
  },
];

describe('address classes', () => {
  it('each class holds its blocks, both families', () => {
    const cases: [string, string][] = [
      ['10.1.2.3', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.0.1', 'private'],
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['169.254.1.1', 'link-local'],
      ['fe80::1', 'link-local'],
      ['fd00::1', 'unique-local'],
      ['100.64.0.1', 'cgnat'],
      ['192.0.2.1', 'documentation'],
      ['2001:db8::1', 'documentation'],
      ['224.0.0.1', 'multicast'],
      ['ff02::1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
    ];
    for (const [address, klass] of cases) expect(refusedClass(address, ADDRESS_CLASSES), address).to.equal(klass);
    for (const address of ['8.8.8.8', '172.32.0.1', '100.128.0.1', '2a00:1450::1', '1.1.1.1'])
      expect(refusedClass(address, ADDRESS_CLASSES), address).to.equal(undefined);
    expect(refusedClass('10.0.0.1', ['loopback'])).to.equal(undefined);
    expect(refusedClass('10.0.0.1', [])).to.equal(undefined);
  });

  it('config: default none, a list of known classes; an unknown one is an error naming the item', () => {
    expect(parseConfig({ zones }, parseOptions()).addresses).to.deep.equal({ refuse: [] });
    expect(
      parseConfig({ zones, addresses: { refuse: ['loopback', 'private', 'loopback'] } }, parseOptions()).addresses,
    ).to.deep.equal({
      refuse: ['loopback', 'private'],
    });
    const err = configError({ zones, addresses: { refuse: ['loopback', 'bogons'] } }, parseOptions());
    expect(err.key).to.equal('addresses.refuse[1]');
    expect(err.message).to.include('expected one of private, loopback');
  });
});
