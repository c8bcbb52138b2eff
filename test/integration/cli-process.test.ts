/**
 * The CLI process at its edges: a reader that closes stdout early (`host list | head -1`),
 * serve's log reader going away (`serve 2>&1 | head`, a restarted log collector),
 * and `serve --port` values that are usage mistakes (refused before anything is connected).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { CLI, ZONE, parseHttp, rawRequest, runCli, writeRedisOnlyConfig } from '../support/bridge.js';
import {
  freePort,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  startRedis,
  type RedisServer,
} from '../../src/lab/index.js';

describe('CLI: stdout closed early by its reader', function () {
  this.timeout(60000);
  let dir: string | undefined;
  let server: RedisServer | undefined;
  let config: string;
  // Far more than a pipe holds (64 KiB): the CLI is still writing when the reader goes.
  const HOSTS = 5000;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('ddns-cli-epipe-');
    server = await startRedis({ dir });
    config = await writeRedisOnlyConfig(dir, { url: server.url });
    const added = await runCli(['account', 'add', 'demo', '--config', config], 'demo-Secret-pw-1\n');
    expect(added.code, added.stderr).to.equal(0);
    const lines = Array.from({ length: HOSTS }, (_, i) => `h${i}.${ZONE} demo\n`).join('');
    const imported = await runCli(['host', 'import', '-', '--config', config], lines);
    expect(imported.code, imported.stderr).to.equal(0);
  });

  after(async () => {
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  it('host list | head -1: exits 0 quietly, no EPIPE stack trace', async () => {
    const child = spawn(process.execPath, [CLI, 'host', 'list', '--config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let first = '';
    // Like head -1: read the first chunk, then close the pipe.
    child.stdout.once('data', (d: Buffer) => {
      first = d.toString();
      child.stdout.destroy();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(first).to.match(new RegExp(`^h\\d+\\.${ZONE.replace(/\./g, '\\.')}\\tdemo`));
    expect(stderr).to.not.include('EPIPE');
    expect(stderr).to.not.include('Error');
    expect(code, stderr).to.equal(0);
  });
});

describe('CLI: serve keeps serving when its log reader goes away', function () {
  this.timeout(60000);
  let dir: string | undefined;
  let server: RedisServer | undefined;
  let serve: ReturnType<typeof spawn> | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('ddns-cli-stderr-');
    server = await startRedis({ dir });
  });
  after(async () => {
    serve?.kill('SIGKILL');
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  it('a closed stderr: the next log line (a dnserr) is dropped, not fatal; later requests are answered', async () => {
    // The zone's primary (127.0.0.1:1) refuses connections: every change is a dnserr with an error log line.
    const config = await writeRedisOnlyConfig(dir!, { url: server!.url });
    const added = await runCli(['account', 'add', 'fred', '--config', config], 'fred-Secret-pw-1\n');
    expect(added.code, added.stderr).to.equal(0);
    const host = await runCli(['host', 'add', `h.${ZONE}`, '--account', 'fred', '--config', config]);
    expect(host.code, host.stderr).to.equal(0);
    const port = await freePort();
    serve = spawn(process.execPath, [CLI, 'serve', '--config', config, '--port', String(port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => serve!.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      let log = '';
      serve!.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('"listening"')) resolve();
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code}: ${log}`)));
    });
    serve.stderr!.destroy();
    const auth = Buffer.from('fred:fred-Secret-pw-1').toString('base64');
    for (let i = 1; i <= 3; i++) {
      const reply = parseHttp(
        await rawRequest(
          '127.0.0.1',
          port,
          `GET /nic/update?hostname=h.${ZONE}&myip=192.0.2.${i} HTTP/1.0\r\nUser-Agent: t/1\r\nAuthorization: Basic ${auth}\r\n\r\n`,
        ),
      );
      expect(reply.body, `request ${i}`).to.equal('dnserr\n');
    }
    expect(serve.exitCode, 'serve still running').to.equal(null);
    expect(serve.signalCode).to.equal(null);
  });
});

describe('CLI: serve --port must be a port number', function () {
  this.timeout(30000);
  let dir: string | undefined;
  let fakeRedis: net.Server | undefined;
  let connections = 0;
  let config: string;

  before(async () => {
    dir = await makeTempDir('ddns-cli-port-');
    // Stands in for Redis: only counts connections (a usage error must come before any).
    fakeRedis = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => fakeRedis!.listen(0, '127.0.0.1', resolve));
    const port = (fakeRedis.address() as net.AddressInfo).port;
    config = await writeRedisOnlyConfig(dir, { url: `redis://127.0.0.1:${port}/0` });
  });

  after(async () => {
    fakeRedis?.close();
    if (dir) await removeDir(dir);
  });

  for (const bad of ['abc', '70000', '-1', '1.5']) {
    it(`--port ${bad}: exit 2 naming the value, nothing connected`, async () => {
      const r = await runCli(['serve', '--config', config, `--port=${bad}`]);
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stderr).to.include(`ddns-bridge: --port: expected a whole number from 0 to 65535, got "${bad}"`);
      expect(r.stdout).to.equal('');
      expect(connections, 'connections to Redis').to.equal(0);
    });
  }
});
