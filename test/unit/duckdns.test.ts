/** The DuckDNS dialect: its query as update parameters, and its reply bytes (docs/protocol.md, "DuckDNS"). */
import { expect } from 'chai';
import { duckDnsFault, duckDnsReply, parseDuckDns, withDuckDns, type DuckDnsAsk } from '../../src/http/duckdns.js';
import { encodeReply } from '../../src/http/reply.js';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';
import { ConfigError } from '../../src/core/errors.js';

const TOKEN = 'abcdefghijklmnopqrstuvwxyz012345'; // 32 base64url characters: token-shaped
const ZONE = { zone: 'dyn.example.org' };

type Accepted = Exclude<DuckDnsAsk, { refused: unknown }>;
function accepted(query: string, settings = ZONE): Accepted {
  const ask = parseDuckDns(query, settings);
  if ('refused' in ask) expect.fail(`refused: ${ask.reason}`);
  return ask;
}
const params = (ask: Accepted) => Object.fromEntries(ask.params);
const KEEP = { wildcard: ['NOCHG'], mx: ['NOCHG'], backmx: ['NOCHG'] };

describe('DuckDNS: the query as an update', () => {
  it('a single label is a name in dialects.duckdns.zone; the first FQDN is the login user, the token its password', () => {
    const ask = accepted(`domains=home&token=${TOKEN}`);
    expect(ask.credentials).to.deep.equal({ user: 'home.dyn.example.org', password: TOKEN });
    expect(params(ask)).to.deep.equal({ hostname: ['home.dyn.example.org'], ...KEEP });
    expect(ask.families).to.equal(undefined);
    expect(ask.verbose).to.equal(false);
  });

  it('FQDNs as they are (the user lowercased, a trailing dot dropped); several names go to hostname together', () => {
    const ask = accepted(`domains=Home.Dyn.Example.org.,other&token=${TOKEN}`);
    expect(ask.credentials).to.deep.equal({ user: 'home.dyn.example.org', password: TOKEN });
    expect(params(ask).hostname).to.deep.equal(['Home.Dyn.Example.org.,other.dyn.example.org']);
  });

  it('a single label without dialects.duckdns.zone, or no domains at all: refused (notfqdn)', () => {
    expect(parseDuckDns(`domains=home&token=${TOKEN}`, {})).to.include({ refused: 'notfqdn' });
    expect(parseDuckDns(`domains=a.example.org,home&token=${TOKEN}`, {})).to.include({ refused: 'notfqdn' });
    expect(parseDuckDns(`token=${TOKEN}`, ZONE)).to.include({ refused: 'notfqdn' });
    expect(parseDuckDns(`domains=,%20,&token=${TOKEN}`, ZONE)).to.include({ refused: 'notfqdn' });
  });

  it('token: absent or empty is missing credentials; not token-shaped (a password) is malformed', () => {
    expect(accepted('domains=home').credentials).to.equal('missing');
    expect(accepted('domains=home&token=').credentials).to.equal('missing');
    expect(accepted('domains=home&token=an-account-password').credentials).to.equal('malformed');
    expect(accepted(`domains=home&token=${TOKEN}x`).credentials).to.equal('malformed');
  });

  it('ip= empty or absent: no address (the client address fills its family); ip=v4, ip=v6, ipv6=', () => {
    for (const q of ['', '&ip=', '&ip=%20'])
      expect(params(accepted(`domains=home&token=${TOKEN}${q}`))).to.not.have.any.keys('myip', 'myipv6');
    expect(params(accepted(`domains=home&token=${TOKEN}&ip=192.0.2.1`)).myip).to.deep.equal(['192.0.2.1']);
    expect(params(accepted(`domains=home&token=${TOKEN}&ip=2001:db8::1`)).myip).to.deep.equal(['2001:db8::1']);
    const both = params(accepted(`domains=home&token=${TOKEN}&ip=192.0.2.1&ipv6=2001:DB8::2`));
    expect(both.myip).to.deep.equal(['192.0.2.1']);
    expect(both.myipv6).to.deep.equal(['2001:db8::2']);
    const v6Only = params(accepted(`domains=home&token=${TOKEN}&ipv6=2001:db8::2`));
    expect(v6Only).to.not.have.property('myip');
    expect(v6Only.myipv6).to.deep.equal(['2001:db8::2']);
    // ipv6= wins over an IPv6 ip=.
    const twoV6 = params(accepted(`domains=home&token=${TOKEN}&ip=2001:db8::1&ipv6=2001:db8::2`));
    expect(twoV6).to.not.have.property('myip');
    expect(twoV6.myipv6).to.deep.equal(['2001:db8::2']);
  });

  it('a malformed ip or ipv6 (an IPv4 address in ipv6 too) is refused before the login', () => {
    for (const q of ['ip=300.1.1.1', 'ip=example', 'ip=192.0.2.1,192.0.2.2', 'ipv6=192.0.2.1', 'ipv6=zz::1'])
      expect(parseDuckDns(`domains=home&token=${TOKEN}&${q}`, ZONE), q).to.include({ refused: 'malformed' });
  });

  it('clear=true without txt removes both addresses, whatever ip and ipv6 say', () => {
    const ask = accepted(`domains=home&token=${TOKEN}&ip=192.0.2.1&clear=true`);
    expect(ask.families).to.deep.equal({ ipv4: 'remove', ipv6: 'remove' });
    expect(params(ask)).to.not.have.property('myip');
    expect(accepted(`domains=home&token=${TOKEN}&clear=false`).families).to.equal(undefined);
  });

  it('txt=V sets the ACME TXT; txt=…&clear=true (any value, empty too) clears it', () => {
    const set = accepted(`domains=home&token=${TOKEN}&txt=V-123&ip=192.0.2.1`);
    expect(params(set)).to.deep.equal({ hostname: ['home.dyn.example.org'], ...KEEP, txt: ['V-123'] });
    expect(set.txt).to.equal(true);
    for (const v of ['removed', '']) {
      const cleared = accepted(`domains=home&token=${TOKEN}&txt=${v}&clear=true`);
      expect(params(cleared)).to.deep.equal({ hostname: ['home.dyn.example.org'], ...KEEP, clear: ['true'] });
      expect(cleared.families).to.equal(undefined);
    }
    // An empty txt without clear goes on as the update path's invalid value (badsys).
    expect(params(accepted(`domains=home&token=${TOKEN}&txt=`)).txt).to.deep.equal(['']);
  });

  it('verbose=true (case-insensitive)', () => {
    expect(accepted(`domains=home&token=${TOKEN}&verbose=TRUE`).verbose).to.equal(true);
  });

  it('GET of the acme-dns path is duckdns; POST stays acme-dns; other routes stay', () => {
    expect(withDuckDns('acme-dns', 'GET')).to.equal('duckdns');
    expect(withDuckDns('acme-dns', 'POST')).to.equal('acme-dns');
    expect(withDuckDns('update', 'GET')).to.equal('update');
    expect(withDuckDns(undefined, 'GET')).to.equal(undefined);
  });
});

describe('DuckDNS: reply bytes', () => {
  const plain = { txt: false, verbose: false };
  const verbose = { txt: false, verbose: true };
  const bytes = (r: ReturnType<typeof duckDnsReply>) => encodeReply(r).toString('latin1');

  it('OK: 200, text/plain, Content-Length 2, no trailing newline; the metric token is good or nochg', () => {
    const r = duckDnsReply({ kind: 'hosts', lines: [{ outcome: 'changed', addresses: '192.0.2.1' }] }, plain);
    expect(r).to.deep.equal({ status: 200, body: 'OK', outcomeToken: 'good' });
    expect(bytes(r)).to.equal(
      'HTTP/1.0 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK',
    );
    const same = duckDnsReply({ kind: 'hosts', lines: [{ outcome: 'unchanged', addresses: '192.0.2.1' }] }, plain);
    expect(same).to.deep.equal({ status: 200, body: 'OK', outcomeToken: 'nochg' });
  });

  it('verbose: OK, the IPv4 and IPv6 this request set (blank when not), UPDATED or NOCHANGE; no final newline', () => {
    const line = (outcome: 'changed' | 'unchanged', addresses?: string) => ({
      kind: 'hosts' as const,
      lines: [{ outcome, ...(addresses === undefined ? {} : { addresses }) }],
    });
    expect(duckDnsReply(line('changed', '192.0.2.1,2001:db8::1'), verbose).body).to.equal(
      'OK\n192.0.2.1\n2001:db8::1\nUPDATED',
    );
    expect(duckDnsReply(line('unchanged', '192.0.2.1'), verbose).body).to.equal('OK\n192.0.2.1\n\nNOCHANGE');
    expect(duckDnsReply(line('changed', '2001:db8::1'), verbose).body).to.equal('OK\n\n2001:db8::1\nUPDATED');
    expect(duckDnsReply(line('changed', ''), verbose).body).to.equal('OK\n\n\nUPDATED');
    // A TXT request's line carries its value, never shown as an address.
    expect(duckDnsReply(line('changed', 'V-123'), { txt: true, verbose: true }).body).to.equal('OK\n\n\nUPDATED');
  });

  it('KO for every refusal: 200, the underlying token as the metric token, Retry-After on 911, dnserr, abuse', () => {
    const req = (outcome: 'bad-credentials' | 'bad-agent' | 'too-many-hosts' | 'unavailable') =>
      duckDnsReply({ kind: 'request', outcome }, verbose);
    expect(req('bad-credentials')).to.deep.equal({ status: 200, body: 'KO', outcomeToken: 'badauth' });
    expect(req('bad-agent')).to.deep.equal({ status: 200, body: 'KO', outcomeToken: 'badagent' });
    expect(req('too-many-hosts')).to.deep.equal({ status: 200, body: 'KO', outcomeToken: 'numhost' });
    const unavailable = req('unavailable');
    expect(unavailable).to.include({ status: 200, body: 'KO', outcomeToken: '911' });
    expect(Number(unavailable.headers?.find(([n]) => n === 'Retry-After')?.[1])).to.be.within(10, 19);
    const abuse = duckDnsReply({ kind: 'hosts', lines: [{ outcome: 'abuse' }] }, plain);
    expect(abuse).to.deep.equal({ status: 200, body: 'KO', outcomeToken: 'abuse', headers: [['Retry-After', '3600']] });
    const dnserr = duckDnsReply({ kind: 'hosts', lines: [{ outcome: 'dns-failed' }] }, plain);
    expect(dnserr.outcomeToken).to.equal('dnserr');
    expect(bytes(dnserr)).to.match(/\r\nRetry-After: 1\d\r\n\r\nKO$/);
  });

  it('an unexpected failure: KO counted as 911, with Retry-After', () => {
    const r = duckDnsFault();
    expect(r).to.include({ status: 200, body: 'KO', outcomeToken: '911' });
    expect(Number(r.headers?.find(([n]) => n === 'Retry-After')?.[1])).to.be.within(10, 19);
  });

  it('several names: one that is not OK makes the whole reply KO, with its token', () => {
    const r = duckDnsReply(
      { kind: 'hosts', lines: [{ outcome: 'changed', addresses: '192.0.2.1' }, { outcome: 'not-owner' }] },
      verbose,
    );
    expect(r).to.deep.equal({ status: 200, body: 'KO', outcomeToken: '!yours' });
    for (const outcome of ['invalid-name', 'unknown-host', 'not-dynamic', 'closed', 'offline-not-allowed'] as const)
      expect(duckDnsReply({ kind: 'hosts', lines: [{ outcome }] }, plain).body).to.equal('KO');
  });
});

describe('DuckDNS: dialects.duckdns.zone', () => {
  const base = {
    listen: ['127.0.0.1:8245'],
    zones: [
      {
        name: 'dyn.example.org',
        primary: '127.0.0.1:53',
        key: { name: 'k', secret: Buffer.alloc(32).toString('base64') },
      },
    ],
  };
  const opts: ParseOptions = { env: {}, baseDir: '/etc/ddns-bridge', readFile: () => '' };
  const load = (dialects: unknown) => parseConfig({ ...base, dialects }, opts);

  it('a configured zone (normalised); absent: none', () => {
    expect(load({ duckdns: { zone: 'Dyn.Example.org.' } }).dialects).to.deep.equal({
      duckdns: { zone: 'dyn.example.org' },
    });
    expect(load({ duckdns: {} }).dialects).to.deep.equal({ duckdns: {} });
    expect(parseConfig(base, opts).dialects).to.equal(undefined);
  });

  it('a zone that is not configured, or an unknown key, names the key', () => {
    expect(() => load({ duckdns: { zone: 'other.example.org' } }))
      .to.throw(ConfigError)
      .with.property('key', 'dialects.duckdns.zone');
    expect(() => load({ duckdns: { zones: 'x' } }))
      .to.throw(ConfigError)
      .with.property('key', 'dialects.duckdns.zones');
  });
});
