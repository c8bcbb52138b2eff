/**
 * The admin listener's limits on a real `serve --workers 2` (the primary holds the admin
 * listener; Redis, Knot): a slow client is cut off on time, connections past
 * admin.maxConnections are refused while the process keeps serving, and a burst of
 * unauthenticated scrapes costs one aggregation of the workers' metrics (docs/security.md,
 * "The admin listener").
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { freePort, makeTempDir, removeDir, requireBinariesOrSkip } from '../../src/lab/index.js';
import { BridgeEnv, rawRequest, sleep } from '../support/bridge.js';
import { Serve } from '../support/serve-process.js';
import { waitFor } from '../support/wait.js';

const TOKEN = 'b'.repeat(24) + '0123456789abcdef0123456789abcdef';
const MAX_CONNECTIONS = 4;
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;

/** A connection to the admin listener, everything it received, and when it closed. */
interface Held {
  socket: net.Socket;
  received: () => string;
  closed: Promise<number>;
}

function connect(port: number): Promise<Held> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

/** Send `request` and close our side behind it (`printf … | nc`); resolves with the answer once the server closes. */
function halfClosed(port: number, request: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () => socket.end(request));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

describe('admin listener limits (serve --workers 2, the primary holds the admin listener)', function () {
  this.timeout(120_000);
  let env: BridgeEnv;
  let serve: Serve;
  let adminPort: number;
  let tokenDir: string | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd']);
    adminPort = await freePort();
    tokenDir = await makeTempDir('admin-limits-');
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writeFile(tokenFile, TOKEN, { mode: 0o600 });
    env = await BridgeEnv.start({
      kind: 'knot',
      serves: 0,
      config: {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile, maxConnections: MAX_CONNECTIONS },
        http: {
          headersTimeout: HEADERS_TIMEOUT_MS / 1000,
          requestTimeout: REQUEST_TIMEOUT_MS / 1000,
          keepAliveTimeout: 5,
        },
      },
    });
    serve = await Serve.start(env, 2);
  });

  after(async () => {
    await serve?.stop();
    await env?.stop();
    if (tokenDir) await removeDir(tokenDir);
  });

  it('headers never finished: cut off within headersTimeout + the check interval; others served meanwhile', async () => {
    const slow = await connect(adminPort);
    const t0 = Date.now();
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const trickle = setInterval(() => slow.socket.writable && slow.socket.write('a'), 100);
    try {
      // Served while the slow one trickles.
      const ok = await rawRequest(
        '127.0.0.1',
        adminPort,
        'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(ok.toString()).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      const at = await Promise.race([slow.closed, sleep(8000).then(() => undefined)]);
      expect(at, 'still open 8 s later (node checks every 30 s by default, headersTimeout was 10 s)').to.not.equal(
        undefined,
      );
      // headersTimeout 1 s, checked every 250 ms; slack for a loaded machine.
      expect(at! - t0).to.be.below(HEADERS_TIMEOUT_MS + 1000);
      // Closed with node's 408, or with nothing.
      expect(slow.received()).to.match(/^(HTTP\/1\.1 408 Request Timeout\r\n[^]*)?$/);
    } finally {
      clearInterval(trickle);
      slow.socket.destroy();
    }
  });

  it('a body never finished: cut off within requestTimeout + the check interval, the process still serving', async () => {
    const slow = await connect(adminPort);
    const t0 = Date.now();
    slow.socket.write(
      `POST /v1/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
    );
    try {
      const at = await Promise.race([slow.closed, sleep(8000).then(() => undefined)]);
      expect(at, 'still open 8 s later').to.not.equal(undefined);
      expect(at! - t0).to.be.below(REQUEST_TIMEOUT_MS + 1000);
      expect(slow.received()).to.not.match(/^HTTP\/1\.1 20/);
      const ok = await rawRequest(
        '127.0.0.1',
        adminPort,
        'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(ok.toString()).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    } finally {
      slow.socket.destroy();
    }
  });

  it('CONNECT: a 405 with exact bytes, not a dropped socket; a half-closed request still gets its answer', async () => {
    const body = '{"error":"ERR_METHOD_NOT_ALLOWED","message":"method not allowed here"}\n';
    expect((await halfClosed(adminPort, 'CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n')).toString()).to.equal(
      'HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n' +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    // `printf 'GET /readyz …' | nc`: node would otherwise close before the (asynchronous) answer.
    const ready = (await halfClosed(adminPort, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')).toString();
    expect(ready).to.match(
      /^HTTP\/1\.1 (200 OK|503 Service Unavailable)\r\n[^]*\r\n\r\n\{"ready":(true|false),"failed":\[/,
    );
  });

  it('a body cut off by the client (half-closed early): 400, and no error logged', async () => {
    const from = serve.lines.length;
    const reply = await halfClosed(
      adminPort,
      `POST /v1/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
    );
    expect(reply.toString()).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    // A line after it, to know the log has caught up.
    await rawRequest('127.0.0.1', adminPort, 'GET /v1/accounts HTTP/1.0\r\n\r\n');
    await serve.waitFor((l) => l.msg === 'admin request' && l.status === 401, 1, 5000, from);
    expect(serve.lines.slice(from).filter((l) => l.level === 'error')).to.deep.equal([]);
    // Nothing was written.
    const accounts = await rawRequest(
      '127.0.0.1',
      adminPort,
      `GET /v1/accounts HTTP/1.0\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
    );
    expect(accounts.toString()).to.match(/\r\n\r\n\[\]\n$/);
  });

  it(`admin.maxConnections ${MAX_CONNECTIONS}: one more is closed with no bytes; the ${MAX_CONNECTIONS} are served; after one closes, new ones are`, async () => {
    // Each held connection is answered once and kept alive (keepAliveTimeout 5 s): proof it was accepted.
    const held: Held[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        // (The connections of the tests before may take a moment to be counted down: refused until then.)
        await waitFor(
          async () => {
            const h = await connect(adminPort);
            h.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
            await Promise.race([
              h.closed,
              waitFor(() => h.received().endsWith('{"status":"ok"}\n'), { timeoutMs: 3000, what: 'answer' }).catch(
                () => undefined,
              ),
            ]);
            if (!h.received().endsWith('{"status":"ok"}\n')) return false;
            held.push(h);
            return true;
          },
          { timeoutMs: 5000, what: `held connection ${i} answered` },
        );
      }
      const extra = await connect(adminPort);
      extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await Promise.race([
        extra.closed,
        sleep(3000).then(() => Promise.reject(new Error('the extra one stayed open'))),
      ]);
      expect(extra.received()).to.equal('');
      // The update listener (the workers) is not touched by it.
      expect((await env.get('/nic/checkip', { port: serve.port })).status).to.equal(200);
      // The held ones still work.
      const first = held[0]!;
      const before = first.received().length;
      first.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => first.received().length > before, {
        timeoutMs: 3000,
        what: 'a held connection answered again',
      });
      // One gone: a new connection is served again.
      held.pop()!.socket.destroy();
      await waitFor(
        async () => {
          // Refused (a reset) until the primary has counted the closed one down.
          const r = await rawRequest(
            '127.0.0.1',
            adminPort,
            'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          ).catch(() => Buffer.alloc(0));
          return r.toString().startsWith('HTTP/1.1 200 OK\r\n');
        },
        { timeoutMs: 3000, what: 'a new connection served once one of the held closed' },
      );
      expect(serve.child.exitCode).to.equal(null);
    } finally {
      for (const h of held) h.socket.destroy();
    }
  });

  it('a burst of unauthenticated scrapes shares one aggregation of the workers (at most 1 s old)', async () => {
    const COUNT = 'ddns_bridge_metrics_aggregations_total';
    const scrape = async (): Promise<number> => {
      const r = (await rawRequest('127.0.0.1', adminPort, 'GET /metrics HTTP/1.0\r\n\r\n')).toString();
      expect(r).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      const m = new RegExp(`^${COUNT} (\\d+)$`, 'm').exec(r);
      expect(m, r.slice(-500)).to.not.equal(null);
      return Number(m![1]);
    };
    const first = await scrape();
    const at = Date.now();
    // The aggregate `first` came from is stale past 1 s: wait that out, then the burst needs a new one.
    await sleep(Math.max(0, at + 1100 - Date.now()));
    const t0 = Date.now();
    // 40 scrapes, as many at a time as admin.maxConnections lets in.
    const counts: number[] = [];
    const lane = async (): Promise<void> => {
      while (counts.length < 40) counts.push(await scrape());
    };
    await Promise.all(Array.from({ length: MAX_CONNECTIONS }, lane));
    const ms = Date.now() - t0;
    // Each aggregation sends one message to every worker: 40 scrapes, one aggregation, shared.
    expect(ms, 'the burst fits in the second the aggregate is kept').to.be.below(900);
    expect(new Set(counts), `burst took ${ms} ms`).to.deep.equal(new Set([first + 1]));
    // And answered from the cache within the second after it.
    expect(await scrape()).to.equal(first + 1);
  });
});
