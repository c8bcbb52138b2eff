/** deSEC's dyndns2 variants on the update path (docs/protocol.md, "deSEC variants"): parsing only. */
import { expect } from 'chai';
import { desecAddresses, dyndns2Ask, queryCredentials, tokenAuth } from '../../src/http/desec.js';
import { paramsOf } from '../../src/http/request.js';
import { parseUpdateParams } from '../../src/core/params.js';
import { requestedAddresses } from '../../src/app/update.js';

const TOKEN = 'AbCdEfGhIjKlMnOpQrStUvWxYz012345';
const OFF = { queryCredentials: false };
const ON = { queryCredentials: true };

/** What the update service would set for a GET with this query: its addresses and family asks. */
function asked(query: string, headers: Record<string, string> = {}, clientIp = '198.51.100.1') {
  const ask = dyndns2Ask(headers, paramsOf(query, undefined), query, OFF);
  const families = ask.families ?? {};
  return { addresses: requestedAddresses(parseUpdateParams(ask.params), clientIp, families), families };
}

describe('deSEC variants: credentials', () => {
  it('Authorization: Token T is the token alone (an empty user), the scheme case-insensitive', () => {
    expect(tokenAuth(`Token ${TOKEN}`)).to.deep.equal({ user: '', password: TOKEN });
    expect(tokenAuth(`token   ${TOKEN} `)).to.deep.equal({ user: '', password: TOKEN });
    expect(tokenAuth('Token')).to.equal('malformed');
    expect(tokenAuth('Token a\u0001b')).to.equal('malformed');
    expect(tokenAuth(`Token ${'x'.repeat(1025)}`)).to.equal('malformed');
    expect(tokenAuth('Basic dTpw')).to.equal(undefined);
    expect(tokenAuth(undefined)).to.equal(undefined);
  });

  it('username= / password= only when http.queryCredentials is on, and never over a header', () => {
    const query = `hostname=h.dyn.example.org&username=h.dyn.example.org&password=${TOKEN}`;
    const params = paramsOf(query, undefined);
    expect(dyndns2Ask({}, params, query, OFF).credentials).to.equal('missing');
    expect(dyndns2Ask({}, params, query, ON).credentials).to.deep.equal({ user: 'h.dyn.example.org', password: TOKEN });
    const basic = `Basic ${Buffer.from('alice:pw').toString('base64')}`;
    expect(dyndns2Ask({ authorization: basic }, params, query, ON).credentials).to.deep.equal({
      user: 'alice',
      password: 'pw',
    });
  });

  it('query credentials: no password is none, no username the token alone, control characters malformed', () => {
    expect(queryCredentials(paramsOf('username=u', undefined))).to.equal('missing');
    expect(queryCredentials(paramsOf(`password=${TOKEN}`, undefined))).to.deep.equal({ user: '', password: TOKEN });
    expect(queryCredentials(paramsOf('username=u%01&password=p', undefined))).to.equal('malformed');
    expect(queryCredentials(paramsOf('username=u&password=', undefined))).to.equal('malformed');
  });

  it('a POST body never carries credentials', () => {
    const params = paramsOf('', 'username=alice&password=pw');
    expect(dyndns2Ask({}, params, '', ON).credentials).to.equal('missing');
  });
});

describe('deSEC variants: addresses', () => {
  it('the seed form is untouched: myipv6= and myipv6=preserve are ignored, the client address fills', () => {
    for (const q of ['myipv6=', 'myipv6=preserve', 'myip=&myipv6=']) {
      expect(asked(q), q).to.deep.equal({ addresses: { ipv4: '198.51.100.1' }, families: {} });
    }
    const query = 'myipv6=preserve';
    const params = paramsOf(query, undefined);
    expect(dyndns2Ask({}, params, query, OFF).params).to.equal(params);
  });

  it('myipv4 gives the A record (after myip), and its IPv6 items are ignored', () => {
    expect(asked('myipv4=192.0.2.1').addresses).to.deep.equal({ ipv4: '192.0.2.1' });
    expect(asked('myipv4=192.0.2.1&myipv6=2001:db8::1').addresses).to.deep.equal({
      ipv4: '192.0.2.1',
      ipv6: '2001:db8::1',
    });
    expect(asked('myip=192.0.2.9&myipv4=192.0.2.1').addresses).to.deep.equal({ ipv4: '192.0.2.9' });
    expect(asked('myipv4=2001:db8::1').addresses).to.deep.equal({ ipv4: '198.51.100.1' });
  });

  it('preserve keeps the family, and the client address fills nothing', () => {
    expect(asked('myipv4=preserve&myipv6=2001:db8::1')).to.deep.equal({
      addresses: { ipv6: '2001:db8::1' },
      families: { ipv4: 'keep' },
    });
    expect(asked('myipv4=192.0.2.1&myipv6=preserve')).to.deep.equal({
      addresses: { ipv4: '192.0.2.1' },
      families: { ipv6: 'keep' },
    });
    expect(asked('myipv4=PRESERVE')).to.deep.equal({ addresses: {}, families: { ipv4: 'keep' } });
  });

  it('an empty value removes the family: myipv4=&myipv6=preserve and myipv4=preserve&myipv6=', () => {
    expect(asked('myipv4=&myipv6=preserve')).to.deep.equal({
      addresses: {},
      families: { ipv4: 'remove', ipv6: 'keep' },
    });
    expect(asked('myipv4=preserve&myipv6=')).to.deep.equal({
      addresses: {},
      families: { ipv4: 'keep', ipv6: 'remove' },
    });
    expect(asked('myipv4=&myipv6=2001:db8::1')).to.deep.equal({
      addresses: { ipv6: '2001:db8::1' },
      families: { ipv4: 'remove' },
    });
  });

  it('an address beats preserve, and preserve beats an empty value', () => {
    expect(asked('myip=192.0.2.9&myipv4=')).to.deep.equal({ addresses: { ipv4: '192.0.2.9' }, families: {} });
    expect(asked('myipv4=preserve,192.0.2.1').addresses).to.deep.equal({ ipv4: '192.0.2.1' });
    expect(asked('myipv4=&myipv4=preserve').families).to.deep.equal({ ipv4: 'keep' });
    expect(asked('myipv4=192.0.2.1&myipv6=&ipv6=2001:db8::2')).to.deep.equal({
      addresses: { ipv4: '192.0.2.1', ipv6: '2001:db8::2' },
      families: {},
    });
  });

  it('Authorization: Token makes a request deSEC form: myipv6= then removes', () => {
    const token = { authorization: `Token ${TOKEN}` };
    expect(asked('myipv6=', token)).to.deep.equal({ addresses: {}, families: { ipv6: 'remove' } });
    expect(asked('', token)).to.deep.equal({ addresses: { ipv4: '198.51.100.1' }, families: {} });
  });

  it('desecAddresses leaves the other parameters as they are', () => {
    const out = desecAddresses(paramsOf('hostname=h.example&myipv4=192.0.2.1&wildcard=ON', undefined));
    expect([...out.params]).to.deep.equal([
      ['hostname', ['h.example']],
      ['wildcard', ['ON']],
      ['myip', ['192.0.2.1']],
    ]);
  });
});

describe('system=noip', () => {
  it('is the same request as system=dyndns (ddclient protocol=noip); other systems stay badsys', () => {
    const q = (s: string) => parseUpdateParams(paramsOf(s, undefined)).systemSupported;
    expect(q('system=noip&hostname=h.example')).to.equal(true);
    expect(q('system=NoIP')).to.equal(true);
    expect(q('system=dyndns')).to.equal(true);
    expect(q('system=other')).to.equal(false);
  });
});
