import { expect } from 'chai';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { parseAddressList } from '../../src/core/addresses.js';
import { HttpFrontend } from '../../src/http/server.js';
import { ClientAddressResolver, paramsOf, parseBasicAuth } from '../../src/http/request.js';
import { encodeReply, outcomeReply, updateReply } from '../../src/http/reply.js';
import { NO_TELEMETRY } from '../../src/core/telemetry.js';

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
  it('every X-Forwarded-For entry a trusted address: the right-most one, the client inside the trusted network as the proxy saw it (never the proxy itself)', () => {
    const r = new ClientAddressResolver(['127.0.0.1', '10.0.0.0/8']);
    expect(r.resolve('127.0.0.1', '10.1.2.3')).to.equal('10.1.2.3');
    // an inside host naming another inside host on the left: the proxy's own entry wins
    expect(r.resolve('127.0.0.1', '10.9.9.9, 10.1.2.3')).to.equal('10.1.2.3');
    expect(r.resolve('127.0.0.1', ['10.9.9.9', '10.1.2.3'])).to.equal('10.1.2.3');
    // an untrusted entry further left is not reached: the right-most untrusted one wins
    expect(r.resolve('127.0.0.1', '198.51.100.1, 203.0.113.5, 10.1.2.3')).to.equal('203.0.113.5');
  });
  it('an unknown peer address has no fallback: no detected address, X-Forwarded-For not believed', () => {
    const r = new ClientAddressResolver(['127.0.0.1', '10.0.0.0/8']);
    expect(r.resolve(undefined, undefined)).to.equal(undefined);
    expect(r.resolve(undefined, '203.0.113.5')).to.equal(undefined);
    expect(r.resolve('', undefined)).to.equal(undefined);
  });
  it('a link-local peer as node reports it (with its zone) is the address without the zone; myip with a zone is still ignored', () => {
    const r = new ClientAddressResolver(['fe80::1']);
    expect(r.resolve('fe80::1c2d:3e4f:5a6b:7c8d%eth0', undefined)).to.equal('fe80::1c2d:3e4f:5a6b:7c8d');
    expect(r.resolve('FE80::2%2', undefined)).to.equal('fe80::2');
    // a link-local trusted proxy, and zones in its X-Forwarded-For entries
    expect(r.resolve('fe80::1%eth0', '203.0.113.5')).to.equal('203.0.113.5');
    expect(r.resolve('fe80::1%eth0', '[fe80::9%eth1]:443')).to.equal('fe80::9');
    expect(new ClientAddressResolver([]).resolve('fe80::1%eth0', '203.0.113.5')).to.equal('fe80::1');
    expect(parseAddressList(['fe80::1%eth0'])).to.deep.equal({});
  });
});

describe('http/reply', () => {
  it('frames every reply as HTTP/1.0 with Content-Length and Connection: close', () => {
    const bytes = encodeReply(
      updateReply(
        {
          kind: 'hosts',
          lines: [{ outcome: 'changed', addresses: '192.0.2.1,2001:db8::1' }, { outcome: 'unknown-host' }],
        },
        'r',
      ),
    );
    expect(bytes.toString()).to.equal(
      'HTTP/1.0 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 34\r\nConnection: close\r\n\r\ngood 192.0.2.1,2001:db8::1\nnohost\n',
    );
  });
  it('badauth is a 401 with a Basic challenge', () => {
    expect(encodeReply(outcomeReply('bad-credentials', 'ddns')).toString()).to.equal(
      'HTTP/1.0 401 Unauthorized\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\nConnection: close\r\nWWW-Authenticate: Basic realm="ddns"\r\n\r\nbadauth\n',
    );
  });
});

/** A frontend's settings and stubbed services for the tests over a real socket (every service answers 911). */
const services = {
  update: { update: async () => ({ kind: 'request' as const, token: '911' as const }) },
  echo: { echo: async () => ({ kind: 'request' as const, token: '911' as const }) },
} as unknown as ConstructorParameters<typeof HttpFrontend>[1];
const settings = {
  basePath: '',
  trustedProxies: [],
  realm: 'r',
  maxBodyBytes: 100,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  keepAliveTimeoutMs: 1000,
  maxHeaderBytes: 16_384,
  maxConnections: 10,
};

describe('http/server connection lifetime (a real socket on 127.0.0.1, services stubbed)', () => {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };

  it('a connection whose peer address is unknown is closed unanswered and reaches no service', async () => {
    const calls: string[] = [];
    const recording = {
      update: {
        update: async (r: { clientIp: string }) => (
          calls.push(`update ${r.clientIp}`),
          { kind: 'request' as const, token: '911' as const }
        ),
      },
      echo: {
        echo: async (r: { clientIp: string }) => (
          calls.push(`echo ${r.clientIp}`),
          { kind: 'request' as const, token: '911' as const }
        ),
      },
    } as unknown as ConstructorParameters<typeof HttpFrontend>[1];
    const frontend = new HttpFrontend(settings, recording, quiet);
    await frontend.listen('127.0.0.1', 0);
    try {
      for (const request of [
        'GET /nic/update?hostname=a.example.org HTTP/1.1\r\nUser-Agent: u\r\n\r\n',
        'GET /checkip HTTP/1.1\r\n\r\n',
      ]) {
        // A connection without a peer address, as a socket reset before getpeername is.
        const written: Buffer[] = [];
        const conn = new Duplex({
          read() {},
          write(chunk: Buffer, _enc, done) {
            written.push(chunk);
            done();
          },
        });
        const closed = new Promise((resolve) => conn.once('close', resolve));
        frontend.servers[0]!.emit('connection', conn);
        conn.push(request);
        await closed;
        expect(Buffer.concat(written).toString('latin1'), request).to.equal('');
      }
      expect(calls).to.deep.equal([]);
    } finally {
      await frontend.close();
    }
  });

  it('a method the parser does not know (extension, lowercase) gets the same 405 with Allow as a known wrong one; bytes that are no request stay 400', async () => {
    const frontend = new HttpFrontend(settings, services, quiet);
    const port = await frontend.listen('127.0.0.1', 0);
    const reply = (request: string) =>
      new Promise<string>((resolve, reject) => {
        let text = '';
        const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(Buffer.from(request, 'latin1')));
        socket.setEncoding('latin1');
        socket.on('data', (d: string) => (text += d));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
    const expected =
      'HTTP/1.0 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\nConnection: close\r\nAllow: GET, POST\r\n\r\nmethod not allowed\n';
    try {
      for (const method of ['DELETE', 'FOO', 'get', 'Post']) {
        expect(
          await reply(`${method} /nic/update?hostname=a.example.org HTTP/1.1\r\nHost: x\r\nUser-Agent: u\r\n\r\n`),
          method,
        ).to.equal(expected);
      }
      // The parser calls these an invalid method too, but they are no request: still 400.
      const badRequest =
        'HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n';
      for (const junk of [
        'GARBAGE\r\n\r\n',
        '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03',
        'G\x00T / HTTP/1.1\r\n\r\n',
      ]) {
        expect(await reply(junk), JSON.stringify(junk)).to.equal(badRequest);
      }
    } finally {
      await frontend.close();
    }
  });

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

describe('http/server: an error after the reply never escapes the request', () => {
  it('telemetry that throws: the reply is sent, the error logged, no unhandled rejection, the next request served', async () => {
    const errors: string[] = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (msg: string) => errors.push(msg) };
    const telemetry = {
      ...NO_TELEMETRY,
      httpRequest() {
        throw new Error('telemetry broke');
      },
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    // Mocha's own listener would fail some other test: ours alone while this one runs.
    const others = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    process.on('unhandledRejection', onUnhandled);
    const frontend = new HttpFrontend(settings, services, logger, telemetry);
    const port = await frontend.listen('127.0.0.1', 0);
    try {
      for (let i = 0; i < 2; i++) {
        const reply = await new Promise<string>((resolve, reject) => {
          let text = '';
          const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write('GET /nowhere HTTP/1.1\r\n\r\n'));
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (text += d));
          socket.on('close', () => resolve(text));
          socket.on('error', reject);
        });
        expect(reply).to.match(/^HTTP\/1\.0 404 Not Found\r\n/);
      }
      // One turn for a rejection to be reported.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).to.deep.equal([]);
      expect(errors).to.deep.equal(['request accounting failed', 'request accounting failed']);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      for (const l of others) process.on('unhandledRejection', l);
      await frontend.close();
    }
  });
});

describe('http/server: a body cut off by the client', () => {
  it('is answered 400 (as node answers it) and logged at debug level, never as a failed request (911, error)', async () => {
    const lines: string[] = [];
    const logger = {
      debug: (msg: string) => lines.push(`debug ${msg}`),
      info() {},
      warn: (msg: string) => lines.push(`warn ${msg}`),
      error: (msg: string) => lines.push(`error ${msg}`),
    };
    const frontend = new HttpFrontend(settings, services, logger);
    const port = await frontend.listen('127.0.0.1', 0);
    try {
      for (const path of ['/nic/update', '/acme/present']) {
        const reply = await new Promise<string>((resolve) => {
          let text = '';
          const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () =>
            socket.end(`POST ${path} HTTP/1.1\r\nContent-Length: 50\r\n\r\nhostname=a`),
          );
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (text += d));
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(text));
        });
        expect(reply, path).to.match(/^HTTP\/1\.0 400 Bad Request\r\n/);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(lines.filter((l) => !l.startsWith('debug'))).to.deep.equal([]);
      expect(lines).to.include('debug request aborted by the client before its body ended');
    } finally {
      await frontend.close();
    }
  });
});

describe('http/server: an error event of a listening server', () => {
  it('is logged, not thrown (an unhandled error event would end the process)', async () => {
    const lines: string[] = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (msg: string) => lines.push(msg) };
    const services = {} as unknown as ConstructorParameters<typeof HttpFrontend>[1];
    const frontend = new HttpFrontend(settings, services, logger);
    await frontend.listen('127.0.0.1', 0);
    try {
      // What node emits when accept() fails (EMFILE under a flood of connections).
      const err = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });
      expect(() => frontend.servers[0]!.emit('error', err)).to.not.throw();
      expect(lines).to.deep.equal(['listener error']);
    } finally {
      await frontend.close();
    }
  });
});
