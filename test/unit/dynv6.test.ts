/** dynv6's update API: the framing parsed, the update path's parameters, the reply bytes (docs/protocol.md). */
import { expect } from 'chai';
import { dynv6Params, dynv6Reply, parseDynv6, type Dynv6Ask } from '../../src/http/dynv6.js';
import { encodeReply } from '../../src/http/reply.js';
import type { UpdateReply } from '../../src/app/update.js';
import { requestedAddresses } from '../../src/app/update.js';
import { parseUpdateParams } from '../../src/core/params.js';

const H = 'home.dyn.example.org';
const T = 'A'.repeat(32);
const V4 = '198.51.100.9';
const V6 = '2001:db8:9::9';

const map = (query: string) => {
  const m = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(query)) m.set(k, [...(m.get(k) ?? []), v]);
  return m;
};
const parse = (query: string, client = V4): Dynv6Ask => parseDynv6(map(query), client);
const ok = (query: string, client = V4) => {
  const ask = parse(query, client);
  if ('invalid' in ask) return expect.fail(`${query}: ${ask.invalid}`);
  return ask;
};

/** What the update path would set: the addresses (the client address filling in) and the removed families. */
function effect(query: string, client = V4) {
  const ask = ok(query, client);
  const params = parseUpdateParams(dynv6Params(ask));
  return {
    addresses: requestedAddresses(params, client, ask.families),
    families: ask.families,
    prefix: params.ipv6Prefix?.text,
  };
}

describe('dynv6: parsing the request', () => {
  it('the host from zone, hostname or Hostname; the token as the credentials {user: host, password: token}', () => {
    for (const name of ['zone', 'hostname', 'Hostname']) {
      const ask = ok(`${name}=${H}&token=${T}`);
      expect(ask.hostname).to.equal(H);
      expect(ask.credentials).to.deep.equal({ user: H, password: T });
    }
    expect(ok(`zone=&hostname=${H}&token=${T}`).hostname).to.equal(H);
    expect(ok(`zone=${H}`).credentials).to.equal('missing');
    expect(ok(`zone=${H}&token=`).credentials).to.equal('missing');
    expect(ok(`zone=${H}&token=a%0Ab`).credentials).to.equal('malformed');
    expect(ok(`zone=${H}&token=${'x'.repeat(5000)}`).credentials).to.equal('malformed');
  });

  it('400 without a host, or with a list of hosts', () => {
    expect(parse(`token=${T}`)).to.deep.equal({ invalid: 'zone required' });
    expect(parse(`zone=&token=${T}`)).to.deep.equal({ invalid: 'zone required' });
    expect(parse(`zone=a.${H},b.${H}&token=${T}`)).to.deep.equal({ invalid: 'invalid zone' });
  });

  it('no ipv4 and no ipv6: the client address fills its family, as on /nic/update', () => {
    expect(effect(`zone=${H}&token=${T}`)).to.deep.equal({ addresses: { ipv4: V4 }, families: {}, prefix: undefined });
    expect(effect(`zone=${H}&token=${T}`, V6).addresses).to.deep.equal({ ipv6: V6 });
  });

  it('addresses set their family only', () => {
    expect(effect(`zone=${H}&token=${T}&ipv4=203.0.113.7`).addresses).to.deep.equal({ ipv4: '203.0.113.7' });
    expect(effect(`zone=${H}&token=${T}&ipv6=2001:DB8::7`).addresses).to.deep.equal({ ipv6: '2001:db8::7' });
    expect(effect(`zone=${H}&token=${T}&ipv4=203.0.113.7&ipv6=2001:db8::7`).addresses).to.deep.equal({
      ipv4: '203.0.113.7',
      ipv6: '2001:db8::7',
    });
  });

  it('auto: the client address when it is of that family; otherwise that family is left as it is', () => {
    expect(effect(`zone=${H}&token=${T}&ipv4=auto`)).to.deep.include({ addresses: { ipv4: V4 }, families: {} });
    expect(effect(`zone=${H}&token=${T}&ipv6=auto`, V6)).to.deep.include({ addresses: { ipv6: V6 }, families: {} });
    expect(effect(`zone=${H}&token=${T}&ipv4=auto`, V6)).to.deep.include({
      addresses: {},
      families: { ipv4: 'keep' },
    });
    expect(effect(`zone=${H}&token=${T}&ipv4=auto&ipv6=auto`, V6)).to.deep.include({
      addresses: { ipv6: V6 },
      families: { ipv4: 'keep' },
    });
  });

  it('-: removes the family; empty: leaves it, and the client address fills nothing', () => {
    expect(effect(`zone=${H}&token=${T}&ipv6=-`)).to.deep.include({ addresses: {}, families: { ipv6: 'remove' } });
    expect(effect(`zone=${H}&token=${T}&ipv4=-&ipv6=${V6}`)).to.deep.include({
      addresses: { ipv6: V6 },
      families: { ipv4: 'remove' },
    });
    expect(effect(`zone=${H}&token=${T}&ipv4=`)).to.deep.include({ addresses: {}, families: { ipv4: 'keep' } });
    expect(effect(`zone=${H}&token=${T}&ipv4=&ipv6=`, V6)).to.deep.include({
      addresses: {},
      families: { ipv4: 'keep', ipv6: 'keep' },
    });
  });

  it('ipv6prefix: the prefix the linked hosts follow; an ipv6 with a length gives it when ipv6prefix is absent', () => {
    expect(effect(`zone=${H}&token=${T}&ipv4=auto&ipv6prefix=2001:db8:1200:3400::/56`).prefix).to.equal(
      '2001:db8:1200:3400::/56',
    );
    expect(effect(`zone=${H}&token=${T}&ipv6prefix=2001:db8:1200:3456::1/56`).prefix).to.equal(
      '2001:db8:1200:3400::/56',
    );
    const withLength = effect(`zone=${H}&token=${T}&ipv6=2001:db8:77:1::5/64`);
    expect(withLength).to.deep.include({ addresses: { ipv6: '2001:db8:77:1::5' }, prefix: '2001:db8:77:1::/64' });
    expect(effect(`zone=${H}&token=${T}&ipv6=2001:db8:77:1::5/64&ipv6prefix=2001:db8:88::/48`).prefix).to.equal(
      '2001:db8:88::/48',
    );
    expect(effect(`zone=${H}&token=${T}&ipv6=2001:db8:77:1::5/128`)).to.deep.include({
      addresses: { ipv6: '2001:db8:77:1::5' },
      prefix: undefined,
    });
    // `-`: no prefix sent (the bridge has no prefix to remove: the linked hosts keep their AAAA).
    expect(effect(`zone=${H}&token=${T}&ipv6=2001:db8:77:1::5/64&ipv6prefix=-`).prefix).to.equal(undefined);
    expect(effect(`zone=${H}&token=${T}&ipv6prefix=`).prefix).to.equal(undefined);
  });

  it('400 for a malformed value, or one the bridge cannot follow (6to4, ipv6prefix=auto)', () => {
    const cases: [string, string][] = [
      ['ipv4=2001:db8::1', 'invalid ipv4 address'],
      ['ipv4=203.0.113.256', 'invalid ipv4 address'],
      ['ipv4=010.0.0.1', 'invalid ipv4 address'],
      ['ipv4=203.0.113.0/24', 'invalid ipv4 address'],
      ['ipv6=203.0.113.7', 'invalid ipv6 address'],
      ['ipv6=::ffff:203.0.113.7', 'invalid ipv6 address'],
      ['ipv6=fe80::1%25eth0', 'invalid ipv6 address'],
      ['ipv6=2001:db8::1/abc', 'invalid ipv6 address'],
      ['ipv6=2001:db8::1/129', 'invalid ipv6 address'],
      ['ipv6=6to4', '6to4 is not supported'],
      ['ipv6prefix=auto', 'ipv6prefix=auto is not supported'],
      ['ipv6prefix=6to4', 'ipv6prefix=6to4 is not supported'],
      ['ipv6prefix=2001:db8::/96', 'invalid ipv6 prefix'],
      ['ipv6prefix=fe80::/64', 'invalid ipv6 prefix'],
      ['ipv6prefix=2001:db8::1', 'invalid ipv6 prefix'],
    ];
    for (const [q, why] of cases) expect(parse(`zone=${H}&token=${T}&${q}`), q).to.deep.equal({ invalid: why });
  });

  it('the update path keeps wildcard, MX and backup MX as they are', () => {
    const params = parseUpdateParams(dynv6Params(ok(`zone=${H}&token=${T}&ipv4=203.0.113.7`)));
    expect(params).to.deep.include({ wildcard: 'keep', mx: 'keep', backmx: 'keep', offline: false });
    expect(params.hosts).to.deep.equal([{ raw: H, fqdn: H }]);
  });
});

describe('dynv6: the reply bytes', () => {
  const bytes = (reply: UpdateReply) => encodeReply(dynv6Reply(reply)).toString('latin1');
  const plain = (status: string, body: string, extra = '') =>
    `HTTP/1.0 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\n` +
    `Connection: close\r\n${extra}\r\n${body}`;

  it('200 addresses updated / addresses unchanged, no trailing newline', () => {
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'changed', addresses: '203.0.113.7' }] })).to.equal(
      plain('200 OK', 'addresses updated'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'unchanged', addresses: '203.0.113.7' }] })).to.equal(
      plain('200 OK', 'addresses unchanged'),
    );
  });

  it('errors by status, without a Basic challenge; Retry-After where the answer says come back later', () => {
    expect(bytes({ kind: 'request', outcome: 'bad-credentials' })).to.equal(
      plain('401 Unauthorized', 'invalid authentication token'),
    );
    expect(bytes({ kind: 'request', outcome: 'bad-agent' })).to.equal(plain('403 Forbidden', 'user agent not allowed'));
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'unknown-host' }] })).to.equal(
      plain('404 Not Found', 'zone not found'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'not-owner' }] })).to.equal(
      plain('403 Forbidden', 'token not allowed for this zone'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'closed' }] })).to.equal(
      plain('403 Forbidden', 'zone is not active'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'not-dynamic' }] })).to.equal(
      plain('403 Forbidden', 'zone is not dynamic'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'invalid-name' }] })).to.equal(
      plain('400 Bad Request', 'invalid zone'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'abuse' }] })).to.equal(
      plain('429 Too Many Requests', 'too many requests', 'Retry-After: 3600\r\n'),
    );
    expect(bytes({ kind: 'hosts', lines: [{ outcome: 'dns-failed' }] })).to.match(
      /^HTTP\/1\.0 502 Bad Gateway\r\n[^]*\r\nRetry-After: 1\d\r\n\r\ndns update failed$/,
    );
    expect(bytes({ kind: 'request', outcome: 'unavailable' })).to.match(
      /^HTTP\/1\.0 503 Service Unavailable\r\n[^]*\r\nRetry-After: 1\d\r\n\r\nservice unavailable$/,
    );
  });

  it("the metrics get the update path's token (outcomeToken)", () => {
    expect(dynv6Reply({ kind: 'hosts', lines: [{ outcome: 'changed' }] }).outcomeToken).to.equal('good');
    expect(dynv6Reply({ kind: 'hosts', lines: [{ outcome: 'unchanged' }] }).outcomeToken).to.equal('nochg');
    expect(dynv6Reply({ kind: 'request', outcome: 'bad-credentials' }).outcomeToken).to.equal('badauth');
    expect(dynv6Reply({ kind: 'hosts', lines: [{ outcome: 'unknown-host' }] }).outcomeToken).to.equal('nohost');
    expect(dynv6Reply({ kind: 'request', outcome: 'unavailable' }).outcomeToken).to.equal('911');
  });
});
