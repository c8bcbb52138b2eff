/**
 * Requests no library would send: HTTP/1.0 without Host over a raw socket, IPv6 loopback,
 * and X-Forwarded-For with and without a trusted reverse proxy in front.
 */
import { expect } from 'chai';
import net from 'node:net';
import { expectedReply, parseHttp, rawRequest, sleep, type BridgeEnv } from '../support/bridge.js';
import { requireInterop, startInteropEnv, uniqueHost } from './support.js';

const ALICE: [string, string] = ['alice', 'alice-raw-pw'];
const UA = 'raw-socket-test/1.0';
const AUTH = `Authorization: Basic ${Buffer.from(ALICE.join(':')).toString('base64')}`;
const OK = (body: string) => expectedReply(200, 'OK', body);

/** An HTTP/1.0 request head with exactly these header lines (no Host unless given). */
const http10 = (target: string, headers: string[]) => [`GET ${target} HTTP/1.0`, ...headers, '', ''].join('\r\n');

async function waitForListeners(env: BridgeEnv, n: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((env.logs.join('').match(/"listening"/g) ?? []).length >= n) return;
    await sleep(50);
  }
  throw new Error(`fewer than ${n} listeners: ${env.logs.join('').slice(-1000)}`);
}

describe('raw HTTP/1.0, IPv6 loopback, and X-Forwarded-For without a trusted proxy', function () {
  this.timeout(30000);
  let env: BridgeEnv;

  before(async function () {
    requireInterop(this, []);
    // `serve --port` gives both listen addresses the same port
    env = await startInteropEnv('knot', { listen: ['127.0.0.1:0', '[::1]:0'] });
    await waitForListeners(env, 2);
    await env.addAccount(...ALICE);
  });
  after(async () => env?.stop());

  async function host(): Promise<string> {
    const h = uniqueHost('raw');
    await env.addHost(h, ALICE[0]);
    return h;
  }

  it('HTTP/1.0 with no Host header at all: exact reply bytes, record published', async () => {
    const h = await host();
    const reply = await env.raw(http10(`/dyndns/update?hostname=${h}&myip=192.0.2.121`, [`User-Agent: ${UA}`, AUTH]));
    expect(reply.toString()).to.equal(OK('good 192.0.2.121\n'));
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.121']);
  });

  it('a client that half-closes right after its request still gets the reply (and the update)', async () => {
    const h = await host();
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port: env.port }, () => {
        socket.write(http10(`/nic/update?hostname=${h}&myip=192.0.2.122`, [`User-Agent: ${UA}`, AUTH]));
        socket.end(); // FIN now, as `printf … | nc` does; the reply comes later
      });
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).to.equal(OK('good 192.0.2.122\n'));
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.122']);
  });

  it('bytes after the request that do not parse (pipelined garbage, a longer body, a huge second head) do not replace its reply', async () => {
    const cases = [
      (h: string) =>
        http10(`/nic/update?hostname=${h}&myip=192.0.2.123`, [`User-Agent: ${UA}`, AUTH]) + 'GARBAGE\r\n\r\n',
      (h: string) =>
        http10(`/nic/update?hostname=${h}&myip=192.0.2.123`, [`User-Agent: ${UA}`, AUTH]) +
        `GET / HTTP/1.1\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
      (h: string) => {
        const body = `hostname=${h}&myip=192.0.2.123`;
        const head = [
          'POST /nic/update HTTP/1.0',
          `User-Agent: ${UA}`,
          AUTH,
          'Content-Type: application/x-www-form-urlencoded',
        ];
        return [...head, `Content-Length: ${body.length}`, '', body].join('\r\n') + '\r\nNOT HTTP\r\n\r\n';
      },
    ];
    for (const [i, request] of cases.entries()) {
      const h = await host();
      const reply = await env.raw(request(h));
      expect(reply.toString(), `case ${i}`).to.equal(OK('good 192.0.2.123\n'));
      expect(await env.ns.query(h, 'A'), `case ${i}`).to.deep.equal(['192.0.2.123']);
    }
  });

  it('POST with Expect: 100-continue gets no HTTP/1.1 interim line: one HTTP/1.0 reply once the body is in', async () => {
    const h = await host();
    const body = `hostname=${h}&myip=192.0.2.124`;
    const head = ['POST /nic/update HTTP/1.1', 'Host: x', `User-Agent: ${UA}`, AUTH, 'Expect: 100-continue'];
    const reply = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = net.connect({ host: '127.0.0.1', port: env.port }, () => {
        socket.write(
          [...head, 'Content-Type: application/x-www-form-urlencoded', `Content-Length: ${body.length}`, '', ''].join(
            '\r\n',
          ),
        );
        // As curl does when no 100 comes: send the body after a short wait.
        setTimeout(() => socket.write(body), 300);
      });
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).to.equal(OK('good 192.0.2.124\n'));
  });

  it('any other Expect value is ignored: no HTTP/1.1 417, the update is answered', async () => {
    const h = await host();
    const head = [
      `GET /nic/update?hostname=${h}&myip=192.0.2.125 HTTP/1.1`,
      'Host: x',
      `User-Agent: ${UA}`,
      AUTH,
      'Expect: something-else',
    ];
    const reply = await env.raw([...head, '', ''].join('\r\n'));
    expect(reply.toString()).to.equal(OK('good 192.0.2.125\n'));
  });

  it('CONNECT gets 405, not a dropped connection', async () => {
    const reply = await env.raw('CONNECT example.net:443 HTTP/1.1\r\nHost: example.net:443\r\n\r\n');
    expect(parseHttp(reply).statusLine).to.equal('HTTP/1.0 405 Method Not Allowed');
  });

  it('X-Forwarded-For from an untrusted peer is ignored (update and /checkip)', async () => {
    const h = await host();
    const xff = 'X-Forwarded-For: 198.51.100.7';
    const reply = await env.raw(http10(`/nic/update?hostname=${h}`, [`User-Agent: ${UA}`, AUTH, xff]));
    expect(reply.toString()).to.equal(OK('good 127.0.0.1\n'));
    expect(await env.ns.query(h, 'A')).to.deep.equal(['127.0.0.1']);
    expect((await env.raw(http10('/checkip', [xff]))).toString()).to.equal(OK('Current IP Address: 127.0.0.1\n'));
  });

  it('over IPv6 loopback ([::1]): an update, the detected ::1 as AAAA, and /checkip', async () => {
    const h = await host();
    const v6 = (req: string) => rawRequest('::1', env.port, req);
    const given = await v6(
      http10(`/dyndns/update?hostname=${h}&myip=192.0.2.122`, ['Host: [::1]', `User-Agent: ${UA}`, AUTH]),
    );
    expect(given.toString()).to.equal(OK('good 192.0.2.122\n'));
    await sleep(100);
    const detected = parseHttp(await v6(http10(`/dyndns/update?hostname=${h}`, [`User-Agent: ${UA}`, AUTH])));
    expect(detected.body).to.equal('good ::1\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.122']);
    expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['::1']);
    expect((await v6(http10('/checkip', []))).toString()).to.equal(OK('Current IP Address: ::1\n'));
  });
});

describe('behind a trusted reverse proxy (trustedProxies: 127.0.0.0/8)', function () {
  this.timeout(30000);
  let env: BridgeEnv;

  before(async function () {
    requireInterop(this, []);
    env = await startInteropEnv('knot', { trustedProxies: ['127.0.0.0/8'] });
    await env.addAccount(...ALICE);
  });
  after(async () => env?.stop());

  async function host(): Promise<string> {
    const h = uniqueHost('proxied');
    await env.addHost(h, ALICE[0]);
    return h;
  }
  const viaProxy = (target: string, xff: string, extra: string[] = []) =>
    env.raw(
      http10(target, ['Host: ddns.example.test', `User-Agent: ${UA}`, AUTH, `X-Forwarded-For: ${xff}`, ...extra]),
    );

  it('the right-most untrusted X-Forwarded-For entry is the client address', async () => {
    const h = await host();
    // a client-supplied (forged) entry on the left, the one the proxy saw on the right
    expect((await viaProxy(`/dyndns/update?hostname=${h}`, '203.0.113.50, 198.51.100.60')).toString()).to.equal(
      OK('good 198.51.100.60\n'),
    );
    expect(await env.ns.query(h, 'A')).to.deep.equal(['198.51.100.60']);
    await sleep(100);
    // trusted hops on the right are skipped
    expect((await viaProxy(`/dyndns/update?hostname=${h}`, '198.51.100.61, 127.0.0.1')).toString()).to.equal(
      OK('good 198.51.100.61\n'),
    );
    expect(await env.ns.query(h, 'A')).to.deep.equal(['198.51.100.61']);
  });

  it('a client inside the trusted network (every entry trusted): the entry the proxy wrote, not the proxy, not one the client wrote', async () => {
    const h = await host();
    expect((await viaProxy(`/dyndns/update?hostname=${h}`, '127.0.0.9')).toString()).to.equal(OK('good 127.0.0.9\n'));
    expect(await env.ns.query(h, 'A')).to.deep.equal(['127.0.0.9']);
    await sleep(100);
    // the client put 127.0.0.77 on the left itself; the proxy appended what it saw
    expect((await viaProxy(`/dyndns/update?hostname=${h}`, '127.0.0.77, 127.0.0.8')).toString()).to.equal(
      OK('good 127.0.0.8\n'),
    );
    expect(await env.ns.query(h, 'A')).to.deep.equal(['127.0.0.8']);
  });

  it('an IPv6 client behind the proxy gets AAAA; an explicit myip still wins over the header', async () => {
    const h = await host();
    expect((await viaProxy(`/nic/update?hostname=${h}`, '2001:db8::62')).toString()).to.equal(
      OK('good 2001:db8::62\n'),
    );
    expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::62']);
    await sleep(100);
    expect((await viaProxy(`/nic/update?hostname=${h}&myip=192.0.2.63`, '198.51.100.63')).toString()).to.equal(
      OK('good 192.0.2.63\n'),
    );
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.63']);
  });

  it('/checkip answers the forwarded client address', async () => {
    const reply = await env.raw(http10('/checkip', ['X-Forwarded-For: 203.0.113.50, 198.51.100.64']));
    expect(reply.toString()).to.equal(OK('Current IP Address: 198.51.100.64\n'));
  });
});
