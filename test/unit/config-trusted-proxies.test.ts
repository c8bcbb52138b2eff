/**
 * CIDR lists and zone indexes (issue 27): the parser, `--from`, and `trustedProxies` at start;
 * and the warnings `check` gives for trustedProxies (src/config/trusted-proxies.ts).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { parseConfig } from '../../src/config/load.js';
import { trustedProxyWarnings } from '../../src/config/trusted-proxies.js';
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

describe('check: trustedProxies warnings', () => {
  const config = (trustedProxies: string[], listen: unknown[] = ['192.0.2.1:8245']) =>
    parseConfig({ zones: [zone], trustedProxies, listen }, parseOptions());

  it('nothing for proxy addresses and networks up to /24 and /64', () => {
    expect(
      trustedProxyWarnings(config(['192.0.2.10', '198.51.100.0/24', '2001:db8:1::/64', '2001:db8::7'])),
    ).to.deep.equal([]);
  });

  it('a block wider than /24 (IPv4) or /64 (IPv6): what it lets a client forge', () => {
    const warnings = trustedProxyWarnings(config(['10.0.0.0/8', '192.0.2.0/25', '2001:db8::/48', '0.0.0.0/0']));
    expect(warnings).to.have.length(3);
    expect(warnings[0]).to.equal(
      'trustedProxies[0]: 10.0.0.0/8 is wider than one proxy network (/24 for IPv4): every address in it may send ' +
        'X-Forwarded-For, and it chooses the address the bridge takes for the client: the one an update publishes, ' +
        "the one an update token's --from must hold, and the one failed logins and junk are counted against (it can " +
        "put other sources in their cool-down); list only your proxies' own addresses",
    );
    expect(warnings[1]).to.match(
      /^trustedProxies\[2\]: 2001:db8::\/48 is wider than one proxy network \(\/64 for IPv6\)/,
    );
    expect(warnings[2]).to.match(/^trustedProxies\[3\]: 0\.0\.0\.0\/0 is wider than/);
  });

  it('loopback trusted while a plain listener takes loopback: any local process can forge X-Forwarded-For', () => {
    const onLoopback = trustedProxyWarnings(config(['127.0.0.1/32'], ['127.0.0.1:8245']));
    expect(onLoopback).to.deep.equal([
      'trustedProxies[0]: 127.0.0.1/32 holds loopback and listen[0] (127.0.0.1:8245) is plain HTTP that loopback ' +
        'reaches: any local process, of any user, can connect there and send X-Forwarded-For, and it chooses the ' +
        "address the bridge takes for the client: the one an update publishes, the one an update token's --from " +
        'must hold, and the one failed logins and junk are counted against (it can put other sources in their ' +
        'cool-down); keep it so only on a machine whose every process you trust',
    ]);
    // A wildcard listener takes loopback too; so does [::] for IPv4.
    expect(trustedProxyWarnings(config(['127.0.0.1'], ['0.0.0.0:8245']))).to.have.length(1);
    // 127.0.0.0/8 is wider than /24 as well: both warnings.
    expect(trustedProxyWarnings(config(['127.0.0.0/8'], ['127.0.0.1:8245']))).to.have.length(2);
    expect(trustedProxyWarnings(config(['::1'], ['[::]:8245']))[0]).to.include('listen[0] ([::]:8245)');
    expect(trustedProxyWarnings(config(['::1'], ['[::1]:8245']))).to.have.length(1);
    // Both rules at once for 0.0.0.0/0.
    expect(trustedProxyWarnings(config(['0.0.0.0/0'], ['127.0.0.1:8245']))).to.have.length(2);
  });

  it('no loopback warning for a TLS listener, another family, or a listener loopback cannot reach', () => {
    const tls = { host: '127.0.0.1', port: 8443, tls: { certFile: '/etc/ddns/c.pem', keyFile: '/etc/ddns/k.pem' } };
    expect(trustedProxyWarnings(config(['127.0.0.1/32'], [tls]))).to.deep.equal([]);
    expect(trustedProxyWarnings(config(['127.0.0.1/32'], ['[::1]:8245']))).to.deep.equal([]);
    expect(trustedProxyWarnings(config(['::1'], ['127.0.0.1:8245']))).to.deep.equal([]);
    expect(trustedProxyWarnings(config(['127.0.0.1/32'], ['192.0.2.1:8245']))).to.deep.equal([]);
  });
});
