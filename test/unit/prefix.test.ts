/** IPv6 prefixes and interface identifiers (src/core/prefix.ts), and how the update parameters carry a prefix. */
import { expect } from 'chai';
import { parseUpdateParams } from '../../src/core/params.js';
import {
  addressInPrefix,
  checkInterfaceId,
  checkIpv6Prefix,
  parseIpv6Prefix,
  prefixExpectations,
  type Ipv6Prefix,
} from '../../src/core/prefix.js';

function prefix(text: string): Ipv6Prefix {
  const p = parseIpv6Prefix(text);
  if (p === undefined) throw new Error(`not a prefix: ${text}`);
  return p;
}

function iid(text: string): string {
  const checked = checkInterfaceId(text);
  if ('problem' in checked) throw new Error(checked.problem);
  return checked.iid;
}

const params = (query: string) =>
  parseUpdateParams(
    [...new URLSearchParams(query)].reduce(
      (m, [k, v]) => m.set(k, [...(m.get(k) ?? []), v]),
      new Map<string, string[]>(),
    ),
  );

describe('core/prefix', () => {
  describe('checkIpv6Prefix', () => {
    it('takes /48, /56, /60 and /64, canonical (RFC 5952)', () => {
      expect(prefix('2001:db8:1200:3400::/56')).to.deep.equal({
        network: '2001:db8:1200:3400::',
        length: 56,
        text: '2001:db8:1200:3400::/56',
      });
      expect(prefix('2001:DB8:1200:0000::/48').text).to.equal('2001:db8:1200::/48');
      expect(prefix(' 2001:db8:1200:3450::/60 ').text).to.equal('2001:db8:1200:3450::/60');
      expect(prefix('2001:0db8:1200:3456:0000:0000:0000:0000/64').text).to.equal('2001:db8:1200:3456::/64');
      expect(prefix('fd00:1:2:3::/64').text).to.equal('fd00:1:2:3::/64');
      expect(prefix('2000::/3').text).to.equal('2000::/3');
    });

    it('clears host bits beyond the length', () => {
      expect(prefix('2001:db8:1200:3456::1/56').text).to.equal('2001:db8:1200:3400::/56');
      expect(prefix('2001:db8:1200:34ff:1:2:3:4/60').text).to.equal('2001:db8:1200:34f0::/60');
      expect(prefix('2001:db8:12ff:ffff::/47').text).to.equal('2001:db8:12fe::/47');
    });

    it('refuses what is not a prefix of 1 to 64 bits, multicast, link-local and all-zero networks', () => {
      for (const bad of [
        '',
        '2001:db8::',
        '2001:db8::/',
        '2001:db8::/0',
        '2001:db8::/65',
        '2001:db8::/128',
        '2001:db8::/056x',
        '2001:db8::/-1',
        '2001:db8::/56/1',
        '192.0.2.0/24',
        '2001:db8::%eth0/64',
        '[2001:db8::]/64',
        'garbage/56',
        '::/48',
        '0:0:0:0::1/64',
        'ff02::/16',
        'fe80::/64',
      ]) {
        expect(checkIpv6Prefix(bad), bad).to.have.property('problem');
        expect(parseIpv6Prefix(bad), bad).to.equal(undefined);
      }
    });
  });

  describe('checkInterfaceId', () => {
    it('takes 64 bits or fewer, with or without the leading ::', () => {
      expect(iid('::1234:5678:9abc:def0')).to.equal('::1234:5678:9abc:def0');
      expect(iid('1234:5678:9ABC:DEF0')).to.equal('::1234:5678:9abc:def0');
      expect(iid('::1')).to.equal('::1');
      expect(iid('1')).to.equal('::1');
      expect(iid('0:0:0:0:0:0:0:42')).to.equal('::42');
      expect(iid('::ffff:ffff:ffff:ffff')).to.equal('::ffff:ffff:ffff:ffff');
    });

    it('refuses more than 64 bits, zero and what is not an address', () => {
      for (const bad of ['::1:0:0:0:0', '2001:db8::1', '::', '0', 'xyz', '::1/64', '1:2:3:4:5', '::1%eth0', '']) {
        expect(checkInterfaceId(bad), bad).to.have.property('problem');
      }
      expect((checkInterfaceId('::1:0:0:0:0') as { problem: string }).problem).to.include('at most 64 bits');
      expect((checkInterfaceId('::') as { problem: string }).problem).to.include('zero');
    });
  });

  describe('addressInPrefix', () => {
    const id = iid('::1234:5678:9abc:def0');
    it('a /56: the prefix bits, zeros to bit 64, the interface identifier', () => {
      expect(addressInPrefix(prefix('2001:db8:1200:3400::/56'), id)).to.equal('2001:db8:1200:3400:1234:5678:9abc:def0');
    });
    it('a /48 and a /64', () => {
      expect(addressInPrefix(prefix('2001:db8:1200::/48'), id)).to.equal('2001:db8:1200:0:1234:5678:9abc:def0');
      expect(addressInPrefix(prefix('2001:db8:1200:3456::/64'), id)).to.equal('2001:db8:1200:3456:1234:5678:9abc:def0');
    });
    it('a /60 and a short identifier, canonical', () => {
      expect(addressInPrefix(prefix('2001:db8:1200:34f0::/60'), iid('::1'))).to.equal('2001:db8:1200:34f0::1');
      expect(addressInPrefix(prefix('2001:db8::/32'), iid('::a'))).to.equal('2001:db8::a');
    });
  });

  it('prefixExpectations: the stored prefix, and no link added since', () => {
    expect(prefixExpectations(prefix('2001:db8:1200:3400::/56'))).to.deep.equal({
      prefix: '2001:db8:1200:3400::/56',
      linksChanged: '',
    });
  });

  describe('update parameters', () => {
    it('ipv6prefix, or ip6lanprefix (FRITZ!Box), beside myip=v4,v6', () => {
      const p = params('hostname=a.example&myip=203.0.113.7,2001:db8::7&ip6lanprefix=2001:db8:1200:3400::/56');
      expect(p.addresses).to.deep.equal({ ipv4: '203.0.113.7', ipv6: '2001:db8::7' });
      expect(p.ipv6Prefix?.text).to.equal('2001:db8:1200:3400::/56');
      expect(params('hostname=a.example&ipv6prefix=2001:db8:1200::/48').ipv6Prefix?.text).to.equal(
        '2001:db8:1200::/48',
      );
    });
    it('ipv6prefix first; one that is not a prefix is ignored', () => {
      expect(params('ipv6prefix=2001:db8:1::/48&ip6lanprefix=2001:db8:2::/48').ipv6Prefix?.text).to.equal(
        '2001:db8:1::/48',
      );
      expect(params('ipv6prefix=junk&ip6lanprefix=2001:db8:2::/48').ipv6Prefix?.text).to.equal('2001:db8:2::/48');
      expect(params('ipv6prefix=2001:db8::/96').ipv6Prefix).to.equal(undefined);
      expect(params('hostname=a.example&myip=2001:db8::/56').ipv6Prefix).to.equal(undefined);
      expect(params('hostname=a.example').ipv6Prefix).to.equal(undefined);
    });
  });
});
