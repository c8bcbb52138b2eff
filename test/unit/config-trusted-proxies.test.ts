/** CIDR lists and zone indexes (issue 27): the parser, `--from`, and `trustedProxies` at start. */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { checkCidr, parseCidr } from '../../src/core/addresses.js';
import { parseSourceList } from '../../src/core/update-tokens.js';
import { configError, parseOptions } from '../support/config-errors.js';

const ZONED = (text: string, index: string) =>
  `"${text}" has a zone index (${index}): a CIDR block names addresses, not an interface; leave out ${index}`;

const zone = {
  name: 'dyn.example.org',
  primary: '127.0.0.1:53',
  key: { name: 'k', secret: randomBytes(32).toString('base64') },
};

describe('CIDR lists: zone indexes are refused by name, never thrown', () => {
  it('checkCidr and parseCidr', () => {
    for (const [text, index] of [
      ['fe80::1%eth0', '%eth0'],
      ['fe80::1%eth0/64', '%eth0'],
      [' fe80::1%2/128 ', '%2'],
      ['fe80::%lo', '%lo'],
    ] as const) {
      expect(checkCidr(text), text).to.deep.equal({ problem: ZONED(text.trim(), index) });
      expect(parseCidr(text), text).to.equal(undefined);
    }
    expect(checkCidr('fe80::/64')).to.deep.include({ family: 6, prefix: 64 });
    expect(checkCidr('10.0.0.0/33')).to.deep.equal({ problem: 'not a CIDR block: "10.0.0.0/33"' });
    expect(checkCidr('1.2.3.4/8/8')).to.deep.equal({ problem: 'not a CIDR block: "1.2.3.4/8/8"' });
  });

  it('token --from (parseSourceList): the zoned block named', () => {
    expect(parseSourceList('192.0.2.0/24,fe80::1%eth0')).to.deep.equal({ problem: ZONED('fe80::1%eth0', '%eth0') });
    expect(parseSourceList('fe80::1%eth0/64')).to.deep.equal({ problem: ZONED('fe80::1%eth0/64', '%eth0') });
  });

  it('trustedProxies: a config error naming the key', () => {
    const e = configError({ zones: [zone], trustedProxies: ['10.0.0.0/24', 'fe80::1%eth0/64'] }, parseOptions());
    expect(e.key).to.equal('trustedProxies[1]');
    expect(e.message).to.equal(`config: trustedProxies[1]: ${ZONED('fe80::1%eth0/64', '%eth0')}`);
    const other = configError({ zones: [zone], trustedProxies: ['fe80::zz'] }, parseOptions());
    expect(other.message).to.equal('config: trustedProxies[0]: expected an address or CIDR block such as "10.0.0.0/8"');
  });
});
