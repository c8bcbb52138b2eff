import { expect } from 'chai';
import net from 'node:net';
import { HttpFrontend } from '../../src/http/server.js';
import { ClientAddressResolver, paramsOf, parseBasicAuth } from '../../src/http/request.js';
import { encodeReply, tokenReply, updateReply } from '../../src/http/reply.js';

describe('http/request', () => {
  it('reads Basic credentials: case-insensitive scheme, first colon splits', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(parseBasicAuth(`Basic ${b64('u:p:w')}`)).to.deep.equal({ user: 'u', password: 'p:w' });
    expect(parseBasicAuth(`BASIC ${b64('u:')}`)).to.deep.equal({ user: 'u', password: '' });
    expect(parseBasicAuth(undefined)).to.equal('missing');
    expect(parseBasicAuth(`Basic ${b64('nocolon')}`)).to.equal('malformed');
    expect(parseBasicAuth(`Basic ${b64(':p')}`)).to.equal('malformed');
    expect(parseBasicAuth('Bearer abc')).to.equal('malformed');
    expect(parseBasicAuth('Basic a b')).to.equal('malformed');
  });
  it('decodes raw and percent-encoded parameters alike; body values follow query values', () => {
    const m = paramsOf('hostname=a.example.org,b.example.org&myip=2001:db8::1%2C192.0.2.1&bad=%zz', 'myip=192.0.2.9');
    expect(m.get('hostname')).to.deep.equal(['a.example.org,b.example.org']);
    expect(m.get('myip')).to.deep.equal(['2001:db8::1,192.0.2.1', '192.0.2.9']);
    expect(m.get('bad')).to.deep.equal(['%zz']);
  });
  it('believes X-Forwarded-For only from trusted proxies, right-most untrusted entry', () => {
    const r = new ClientAddressResolver(['127.0.0.1', '10.0.0.0/8']);
    expect(r.resolve('::ffff:127.0.0.1', '198.51.100.1, 203.0.113.5, 10.1.1.1')).to.equal('203.0.113.5');
    expect(r.resolve('192.0.2.77', '203.0.113.5')).to.equal('192.0.2.77');
    expect(r.resolve('127.0.0.1', undefined)).to.equal('127.0.0.1');
    expect(r.resolve('127.0.0.1', 'garbage')).to.equal('127.0.0.1');
    expect(r.resolve('127.0.0.1', '[2001:db8::5]:443')).to.equal('2001:db8::5');
  });
});

describe('http/reply', () => {
  it('frames every reply as HTTP/1.0 with Content-Length and Connection: close', () => {
    const bytes = encodeReply(updateReply({ kind: 'hosts', lines: [{ token: 'good', addresses: '192.0.2.1,2001:db8::1' }, { token: 'nohost' }] }, 'r'));
    expect(bytes.toString()).to.equal(
      'HTTP/1.0 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 34\r\nConnection: close\r\n\r\ngood 192.0.2.1,2001:db8::1\nnohost\n',
    );
  });
  it('badauth is a 401 with a Basic challenge', () => {
    expect(encodeReply(tokenReply('badauth', 'ddns')).toString()).to.equal(
      'HTTP/1.0 401 Unauthorized\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\nConnection: close\r\nWWW-Authenticate: Basic realm="ddns"\r\n\r\nbadauth\n',
    );
  });
});

describe('http/server connection lifetime (a real socket on 127.0.0.1, services stubbed)', () => {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const services = {
    update: { update: async () => ({ kind: 'request' as const, token: '911' as const }) },
    echo: { echo: async () => ({ kind: 'request' as const, token: '911' as const }) },
  } as unknown as ConstructorParameters<typeof HttpFrontend>[1];
  const settings = { basePath: '', trustedProxies: [], realm: 'r', maxBodyBytes: 100, headersTimeoutMs: 10_000, requestTimeoutMs: 15_000, keepAliveTimeoutMs: 1000, maxHeaderBytes: 16_384, maxConnections: 10 };

  it('a body past the cap that takes longer than the keep-alive time to arrive is read to its end: the client sends it all and gets its 413', async function () {
    this.timeout(10_000);
    const frontend = new HttpFrontend(settings, services, quiet);
    const port = await frontend.listen('127.0.0.1', 0);
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const errors: string[] = [];
    socket.on('error', (e) => errors.push(e.message));
    let reply = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (reply += d));
    await new Promise((resolve) => socket.once('connect', resolve));
    try {
      socket.write('POST /nic/update HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n');
      for (let i = 0; i < 10; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200)); // 2 s in all: twice the keep-alive time
        socket.write('a'.repeat(500));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(errors, 'every part of the body was taken').to.deep.equal([]);
      expect(reply).to.match(/^HTTP\/1\.0 413 /);
    } finally {
      socket.destroy();
      await frontend.close();
    }
  });

  it('after a POST is answered, a client trickling another request into the connection is cut off after the keep-alive time', async function () {
    this.timeout(10_000);
    // Long header and request timeouts: only the keep-alive time (1 s) may end it.
    const frontend = new HttpFrontend(settings, services, quiet);
    const port = await frontend.listen('127.0.0.1', 0);
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.on('error', () => undefined);
    let reply = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (reply += d));
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    await new Promise((resolve) => socket.once('connect', resolve));
    const t0 = Date.now();
    socket.write('POST /nowhere HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\nX: ');
    const trickle = setInterval(() => socket.write('a'), 300);
    try {
      const at = await Promise.race([closed, new Promise<undefined>((resolve) => setTimeout(resolve, 4000))]);
      expect(at, 'still open 4 s after the reply').to.not.equal(undefined);
      expect(at! - t0).to.be.below(3000);
      expect(reply).to.match(/^HTTP\/1\.0 404 Not Found\r\n/);
    } finally {
      clearInterval(trickle);
      socket.destroy();
      await frontend.close();
    }
  });
});
