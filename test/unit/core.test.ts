import { expect } from 'chai';
import { ancestorsOf, namesBetween, normalizeHostname, zoneOf } from '../../src/core/names.js';
import { parseAddress, parseAddressList, parseCidr, cidrContains } from '../../src/core/addresses.js';
import { parseUpdateParams, formatAddresses } from '../../src/core/params.js';
import { HOST_TOKENS, REQUEST_TOKENS } from '../../src/core/tokens.js';
import {
  hostReply,
  isJunk,
  outcomeOfError,
  requestReply,
  type HostOutcome,
  type RequestOutcome,
} from '../../src/core/outcomes.js';
import { expectationsFor, targetState, sameState, type HostRecord } from '../../src/core/types.js';
import { DnsUpdateError, StoreUnavailableError } from '../../src/core/errors.js';

const params = (q: string) => {
  const m = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(q)) m.set(k, [...(m.get(k) ?? []), v]);
  return m;
};

describe('core/names', () => {
  it('normalises: trim, trailing dot, lowercase, IDN to punycode', () => {
    expect(normalizeHostname('  Host.Example.ORG. ')).to.equal('host.example.org');
    expect(normalizeHostname('bücher.example.org')).to.equal('xn--bcher-kva.example.org');
  });
  it('an ideographic full stop counts as a dot, also as the one trailing dot allowed', () => {
    for (const stop of ['\u3002', '\uff0e', '\uff61']) {
      expect(normalizeHostname(`a1.dyn.example.test${stop}`), JSON.stringify(stop)).to.equal('a1.dyn.example.test');
      expect(normalizeHostname(`a1${stop}dyn.example.test`)).to.equal('a1.dyn.example.test');
      expect(normalizeHostname(`a1.dyn.example.test.${stop}`), 'two trailing dots').to.equal(undefined);
    }
  });
  it('rejects what is not an FQDN', () => {
    for (const bad of [
      '',
      '.',
      'single',
      'a..b',
      '-a.example.org',
      'a-.example.org',
      'under_score.example.org',
      '*.example.org',
      '192.0.2.1',
      'a b.example.org',
      'a\u0000.example.org',
      `${'a'.repeat(64)}.example.org`,
      `${'a.'.repeat(127)}org`,
    ]) {
      expect(normalizeHostname(bad), JSON.stringify(bad)).to.equal(undefined);
    }
  });
  it("picks the longest zone that is a proper suffix; no zone's apex is in any zone", () => {
    const zones = ['example.org', 'dyn.example.org'];
    expect(zoneOf('h.dyn.example.org', zones)).to.equal('dyn.example.org');
    expect(zoneOf('h.example.org', zones)).to.equal('example.org');
    expect(zoneOf('dyn.example.org', zones)).to.equal(undefined); // the child zone's apex, not a host of the parent
    expect(zoneOf('dyn.example.org', ['example.org'])).to.equal('example.org');
    expect(zoneOf('example.org', zones)).to.equal(undefined);
    expect(zoneOf('hexample.org', zones)).to.equal(undefined);
  });
});

describe('core/names: nesting', () => {
  it('namesBetween: the names strictly between a host and its zone apex, nearest first', () => {
    expect(namesBetween('a.dyn.example.org', 'dyn.example.org')).to.deep.equal([]);
    expect(namesBetween('b.a.dyn.example.org', 'dyn.example.org')).to.deep.equal(['a.dyn.example.org']);
    expect(namesBetween('c.b.a.dyn.example.org', 'dyn.example.org')).to.deep.equal([
      'b.a.dyn.example.org',
      'a.dyn.example.org',
    ]);
    expect(namesBetween('a.other.org', 'dyn.example.org')).to.deep.equal([]);
    expect(namesBetween('xdyn.example.org', 'dyn.example.org')).to.deep.equal([]);
  });

  it('ancestorsOf: every proper ancestor of two labels or more', () => {
    expect(ancestorsOf('b.a.dyn.example.org')).to.deep.equal(['a.dyn.example.org', 'dyn.example.org', 'example.org']);
    expect(ancestorsOf('example.org')).to.deep.equal([]);
  });
});

describe('core/addresses', () => {
  it('parses v4, v6 (canonical), unmaps ::ffff:, rejects prefixes and junk', () => {
    expect(parseAddress('203.0.113.7')).to.deep.equal({ family: 4, address: '203.0.113.7' });
    expect(parseAddress('2001:DB8:0:0:0:0:0:7')).to.deep.equal({ family: 6, address: '2001:db8::7' });
    expect(parseAddress('::ffff:192.0.2.1')).to.deep.equal({ family: 4, address: '192.0.2.1' });
    for (const bad of ['2001:db8:1200::/56', '1.2.3', '01.2.3.4', 'fe80::1%eth0', 'abc', ''])
      expect(parseAddress(bad), bad).to.equal(undefined);
  });
  it('takes the first address of each family from comma lists', () => {
    expect(parseAddressList(['2001:db8::1,192.0.2.1', '192.0.2.2'])).to.deep.equal({
      ipv4: '192.0.2.1',
      ipv6: '2001:db8::1',
    });
    expect(parseAddressList(['192.0.2.1,2001:db8:1200::/56'])).to.deep.equal({ ipv4: '192.0.2.1' });
  });
  it('matches CIDR blocks of both families', () => {
    expect(cidrContains(parseCidr('10.0.0.0/8')!, '10.1.2.3')).to.equal(true);
    expect(cidrContains(parseCidr('10.0.0.0/8')!, '11.1.2.3')).to.equal(false);
    expect(cidrContains(parseCidr('2001:db8::/32')!, '2001:db8:ffff::1')).to.equal(true);
    expect(cidrContains(parseCidr('::1')!, '::1')).to.equal(true);
    expect(cidrContains(parseCidr('127.0.0.1')!, '::1')).to.equal(false);
    expect(parseCidr('10.0.0.0/33')).to.equal(undefined);
  });
});

describe('core/params', () => {
  it('reads every parameter with defaults', () => {
    const p = parseUpdateParams(
      params(
        'hostname=A.example.org,b.example.org&myip=192.0.2.1&wildcard=on&mx=mx.example.org&backmx=yes&offline=NO&system=dyndns&junk=1',
      ),
    );
    expect(p.hosts.map((h) => h.fqdn)).to.deep.equal(['a.example.org', 'b.example.org']);
    expect(p).to.include({
      wildcard: true,
      mx: 'mx.example.org',
      backmx: true,
      offline: false,
      systemSupported: true,
      tooManyHosts: false,
    });
    const d = parseUpdateParams(params('hostname=a.example.org'));
    expect(d).to.include({ wildcard: false, mx: undefined, backmx: false, offline: false, systemSupported: true });
    expect(parseUpdateParams(params('hostname=a.example.org&wildcard=NOCHG')).wildcard).to.equal('keep');
    expect(parseUpdateParams(params('hostname=a.example.org&system=webhop')).systemSupported).to.equal(false);
  });
  it('more than 20 names is numhost; 20 is fine', () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `h${i}.example.org`).join(',');
    expect(parseUpdateParams(params(`hostname=${names(20)}`)).tooManyHosts).to.equal(false);
    expect(parseUpdateParams(params(`hostname=${names(21)}`)).tooManyHosts).to.equal(true);
  });
  it('IPv6 aliases carry the v6 address; formatting puts v4 first', () => {
    const p = parseUpdateParams(params('hostname=a.example.org&myipv6=2001:db8::2&myip=192.0.2.2'));
    expect(formatAddresses(p.addresses)).to.equal('192.0.2.2,2001:db8::2');
    for (const alias of ['ipv6', 'myip6'])
      expect(parseUpdateParams(params(`hostname=a.b.c&${alias}=2001:db8::3`)).addresses).to.deep.equal({
        ipv6: '2001:db8::3',
      });
  });
  it('an IPv4 address in an IPv6 alias is ignored, like any item that does not parse', () => {
    for (const alias of ['myipv6', 'ipv6', 'myip6']) {
      expect(parseUpdateParams(params(`hostname=a.b.c&${alias}=192.0.2.4`)).addresses).to.deep.equal({});
      expect(parseUpdateParams(params(`hostname=a.b.c&${alias}=::ffff:192.0.2.4`)).addresses).to.deep.equal({});
      expect(parseUpdateParams(params(`hostname=a.b.c&${alias}=192.0.2.4,2001:db8::4`)).addresses).to.deep.equal({
        ipv6: '2001:db8::4',
      });
    }
    // myip's own items come first, whatever the order of the parameters.
    expect(
      parseUpdateParams(params('hostname=a.b.c&myipv6=2001:db8::5&myip=2001:db8::6,192.0.2.6')).addresses,
    ).to.deep.equal({ ipv4: '192.0.2.6', ipv6: '2001:db8::6' });
  });
});

describe('core/outcomes: the one outcome → reply map', () => {
  const hostOutcomes: HostOutcome[] = [
    'changed',
    'unchanged',
    'invalid-name',
    'unknown-host',
    'not-owner',
    'not-dynamic',
    'closed',
    'abuse',
    'offline-not-allowed',
    'dns-failed',
  ];
  const requestOutcomes: RequestOutcome[] = ['bad-agent', 'bad-credentials', 'too-many-hosts', 'unavailable'];

  it("every token of the catalog is some outcome's, once", () => {
    expect(hostOutcomes.map((o) => hostReply(o).token).sort()).to.deep.equal([...HOST_TOKENS].sort());
    expect(requestOutcomes.map((o) => requestReply(o).token).sort()).to.deep.equal([...REQUEST_TOKENS].sort());
  });
  it('only bad credentials are not 200', () => {
    expect(requestReply('bad-credentials').status).to.equal(401);
    for (const o of hostOutcomes) expect(hostReply(o).status, o).to.equal(200);
    for (const o of requestOutcomes.filter((r) => r !== 'bad-credentials'))
      expect(requestReply(o).status, o).to.equal(200);
  });
  it("junk is the client's mistake, never our fault", () => {
    expect([...hostOutcomes, ...requestOutcomes].filter(isJunk).sort()).to.deep.equal([
      'bad-credentials',
      'invalid-name',
      'not-dynamic',
      'not-owner',
      'too-many-hosts',
      'unknown-host',
    ]);
  });
  it("an error is a DNS failure or the service's own (911)", () => {
    expect(outcomeOfError(new DnsUpdateError('ERR_DNS_TIMEOUT', 'z', 'x'))).to.equal('dns-failed');
    expect(outcomeOfError(new StoreUnavailableError('x'))).to.equal('unavailable');
    expect(outcomeOfError(new Error('x'))).to.equal('unavailable');
  });
});

describe('core/types: target state and nochg expectations agree', () => {
  const host = (over: Partial<HostRecord> = {}): HostRecord => ({
    fqdn: 'h.example.org',
    account: 'a',
    type: 'dynamic',
    state: 'active',
    updatedAt: 1,
    ipv4: '192.0.2.1',
    ipv6: '2001:db8::1',
    wildcard: true,
    mx: null,
    backmx: false,
    ...over,
  });
  const holds = (h: HostRecord, e: Record<string, string>) =>
    Object.entries(e).every(([k, v]) => {
      const stored = (h as unknown as Record<string, unknown>)[k];
      const text = stored === null ? '' : typeof stored === 'boolean' ? (stored ? '1' : '0') : String(stored);
      return text === v;
    });
  const cases = [
    { ipv4: '192.0.2.1', wildcard: true as const, backmx: false, offline: false },
    { ipv4: '192.0.2.9', wildcard: true as const, backmx: false, offline: false },
    { ipv6: '2001:db8::1', wildcard: 'keep' as const, backmx: false, offline: false },
    { ipv4: '192.0.2.1', wildcard: false as const, backmx: false, offline: false },
    { ipv4: '192.0.2.1', wildcard: true as const, backmx: true, offline: false },
    { ipv4: '192.0.2.1', wildcard: true as const, backmx: false, offline: true },
    { ipv4: '192.0.2.1', wildcard: true as const, backmx: 'keep' as const, offline: false },
  ];
  for (const [i, req] of cases.entries()) {
    for (const h of [host(), host({ state: 'offline', ipv4: null, ipv6: null })]) {
      it(`case ${i} from ${h.state}`, () => {
        const mx = i === 4 ? 'mx.example.org' : i === 6 ? ('keep' as const) : null;
        expect(holds(h, expectationsFor(req, mx))).to.equal(sameState(h, targetState(h, req, mx)));
      });
    }
  }
  it('mx=NOCHG and backmx=NOCHG keep what is stored', () => {
    const h = host({ mx: 'mx.example.org', backmx: true });
    const req = { ipv4: '192.0.2.1', wildcard: true as const, backmx: 'keep' as const, offline: false };
    expect(targetState(h, req, 'keep')).to.include({ mx: 'mx.example.org', backmx: true });
    expect(expectationsFor(req, 'keep')).to.not.have.any.keys('mx', 'backmx');
    expect(sameState(h, targetState(h, req, 'keep'))).to.equal(true);
  });
  it('coming back from offline sets only the requested family', () => {
    const t = targetState(
      host({ state: 'offline', ipv4: null, ipv6: null }),
      { ipv4: '192.0.2.5', wildcard: false, backmx: false, offline: false },
      null,
    );
    expect(t).to.include({ ipv4: '192.0.2.5', ipv6: null, offline: false });
  });
});
