/**
 * deSEC's dyndns2 variants end to end with `http.queryCredentials` off (the default): the real serve process,
 * redis-server, knotd, and the records read back with dig (docs/protocol.md, "deSEC variants"). The seed's own
 * requests keep their replies; `Authorization: Token` takes only an update token; query credentials are ignored.
 */
import { expect } from 'chai';
import { BridgeEnv, ZONE, expectedReply } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const ALICE = { user: 'alice', password: 'alice-desec-int-pw' };
const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);

let seq = 0;
const uniq = (label: string) => `${label}-${process.pid}-${++seq}.${ZONE}`;

describe('deSEC variants on the update path (knot, http.queryCredentials off)', function () {
  this.timeout(60000);
  let env: BridgeEnv;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({
      kind: 'knot',
      config: {
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
        credentials: { maxFailures: 1000 },
        junk: { threshold: 1000 },
      },
    });
    await env.addAccount(ALICE.user, ALICE.password);
  });
  after(async () => env?.stop());

  const auth: [string, string] = [ALICE.user, ALICE.password];
  async function host(label: string, ipv4 = '192.0.2.50', ipv6 = '2001:db8::50'): Promise<string> {
    const h = uniq(label);
    await env.addHost(h, ALICE.user);
    const r = await env.get(`/nic/update?hostname=${h}&myip=${ipv4},${ipv6}`, { auth });
    expect(r.body).to.equal(`good ${ipv4},${ipv6}\n`);
    return h;
  }
  async function token(fqdn: string): Promise<string> {
    return (await env.cliOk(['token', 'add', fqdn])).trimEnd().split('\n').at(-1)!;
  }
  const records = async (h: string) => ({ a: await env.ns.query(h, 'A'), aaaa: await env.ns.query(h, 'AAAA') });
  const tokenHeader = (t: string) => [`Authorization: Token ${t}`];

  it('the seed form is unchanged: myipv6= and myipv6=preserve are ignored, the client address is used', async () => {
    const h = await host('seed');
    for (const q of ['myipv6=', 'myipv6=preserve']) {
      const r = await env.get(`/nic/update?hostname=${h}&${q}`, { auth });
      expect(r.body, q).to.match(/^(good|nochg) 127\.0\.0\.1\n$/);
      expect(await records(h), q).to.deep.equal({ a: ['127.0.0.1'], aaaa: ['2001:db8::50'] });
    }
  });

  it('myipv4 makes the deSEC form on every update path and GET /update', async () => {
    const h = await host('paths');
    const cases: [string, string, { a: string[]; aaaa: string[] }][] = [
      ['/nic/update', 'myipv4=192.0.2.51&myipv6=preserve', { a: ['192.0.2.51'], aaaa: ['2001:db8::50'] }],
      ['/v3/update', 'myipv4=&myipv6=preserve', { a: [], aaaa: ['2001:db8::50'] }],
      ['/dyndns/update', 'myipv4=192.0.2.52&myipv6=', { a: ['192.0.2.52'], aaaa: [] }],
      ['/update', 'myipv4=preserve&myipv6=2001:db8::53', { a: ['192.0.2.52'], aaaa: ['2001:db8::53'] }],
    ];
    for (const [p, q, want] of cases) {
      const r = await env.get(`${p}?hostname=${h}&${q}`, { auth });
      expect(r.statusLine, p).to.equal('HTTP/1.0 200 OK');
      expect(r.body, `${p}?${q}`).to.match(/^good/);
      expect(await records(h), `${p}?${q}`).to.deep.equal(want);
    }
  });

  it('GET /update in the seed form is the update request too; POST /update stays acme-dns', async () => {
    const h = await host('get-update');
    expect((await env.get(`/update?hostname=${h}&myip=192.0.2.54`, { auth })).body).to.equal('good 192.0.2.54\n');
    const post = await env.raw(
      'POST /update HTTP/1.1\r\nHost: x\r\nUser-Agent: t/1\r\nContent-Type: application/json\r\n' +
        'Content-Length: 2\r\nConnection: close\r\n\r\n{}',
    );
    expect(post.toString('latin1')).to.match(/^HTTP\/1\.0 40[01] /);
  });

  it('Authorization: Token: the token alone, the host from hostname or the token', async () => {
    const h = await host('token');
    const other = await host('token-other');
    const t = await token(h);
    const r = await env.get('/nic/update?myipv4=192.0.2.55', { headers: tokenHeader(t) });
    expect(r.body).to.equal('good 192.0.2.55\n');
    expect(await records(h)).to.deep.equal({ a: ['192.0.2.55'], aaaa: ['2001:db8::50'] });
    // Token makes the deSEC form: myipv6= removes (and the client address then fills nothing).
    expect((await env.get(`/nic/update?hostname=${h}&myipv6=`, { headers: tokenHeader(t) })).body).to.match(/^good/);
    expect(await records(h)).to.deep.equal({ a: ['192.0.2.55'], aaaa: [] });
    const notOwn = await env.get(`/nic/update?hostname=${other}&myip=192.0.2.56`, { headers: tokenHeader(t) });
    expect(notOwn.body).to.equal('!yours\n');
    expect(await records(other)).to.deep.equal({ a: ['192.0.2.50'], aaaa: ['2001:db8::50'] });
  });

  it('Authorization: Token with a password, a wrong token or nothing: badauth, nothing changes', async () => {
    const h = await host('token-bad');
    for (const value of [ALICE.password, 'AbCdEfGhIjKlMnOpQrStUvWxYz012345', '']) {
      const headers = [`Authorization: Token ${value}`.trimEnd()];
      const r = await env.raw(
        [
          `GET /nic/update?hostname=${h}&myip=192.0.2.57 HTTP/1.1`,
          'Host: x',
          'User-Agent: t/1',
          ...headers,
          '',
          '',
        ].join('\r\n'),
      );
      expect(r.toString('latin1'), value).to.equal(BADAUTH);
    }
    expect(await records(h)).to.deep.equal({ a: ['192.0.2.50'], aaaa: ['2001:db8::50'] });
  });

  it('query credentials are ignored while http.queryCredentials is off: badauth', async () => {
    const h = await host('query-off');
    const r = await env.get(
      `/nic/update?hostname=${h}&username=${ALICE.user}&password=${ALICE.password}&myip=192.0.2.58`,
    );
    expect(r.statusLine).to.equal('HTTP/1.0 401 Unauthorized');
    expect(r.body).to.equal('badauth\n');
    expect(await records(h)).to.deep.equal({ a: ['192.0.2.50'], aaaa: ['2001:db8::50'] });
    expect(env.logs.join('')).not.to.include(ALICE.password);
  });

  it('system=noip is dyndns (ddclient protocol=noip); another system stays badsys', async () => {
    const h = await host('noip');
    const r = await env.get(`/nic/update?system=noip&hostname=${h}&myip=192.0.2.59`, { auth });
    expect(r.body).to.equal('good 192.0.2.59\n');
    const other = await env.get(`/nic/update?system=other&hostname=${h}&myip=192.0.2.60`, { auth });
    expect(other.body).to.equal('badsys\n');
    expect(await records(h)).to.deep.equal({ a: ['192.0.2.59'], aaaa: ['2001:db8::50'] });
  });
});
