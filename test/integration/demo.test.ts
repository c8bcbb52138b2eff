/**
 * `ddns-bridge demo` as a user runs it: a real process that starts its own redis-server and
 * knotd/named/pdns_server, prints what to try, serves updates, and on SIGINT/SIGTERM leaves nothing behind
 * (processes, listeners, temp dir).
 */
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { access, readFile, readdir, readlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CLI, parseHttp, rawRequest, runCli } from '../support/bridge.js';
import {
  DAEMONS,
  freePort,
  LAB_KINDS,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  requireBinary,
  serverBinaries,
  writeKeyFile,
  type LabKind,
} from '../../src/lab/index.js';

const UA = 'ddns-bridge-demo-tests/1.0 tests@example.test';
const READY_TIMEOUT_MS = 60000;
const STOP_TIMEOUT_MS = 5000;

interface DemoInfo {
  url: string;
  config: string;
  zone: string;
  nameserver: { kind: LabKind; host: string; port: number; key: { name: string; algorithm: string; secret: string } };
  gateway: { host: string; port: number; keyFile: string };
  account: { name: string; password: string };
  hostname: string;
}

class DemoProcess {
  stdout = '';
  stderr = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => ((this.exit = { code, signal }), resolve())),
    );
  }

  static start(args: string[]): DemoProcess {
    const child = spawn(process.execPath, [CLI, 'demo', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DDNS_BRIDGE_CONFIG: '' },
    });
    return new DemoProcess(child);
  }

  /** Resolves once stdout holds `done(stdout)`; fails if the demo exits first or takes too long. */
  async waitForStdout(done: (stdout: string) => boolean, timeoutMs = READY_TIMEOUT_MS): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.stdout)) {
      if (this.exit) throw new Error(`demo exited (${JSON.stringify(this.exit)}) before it was ready:\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`demo not ready after ${timeoutMs} ms:\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.stdout;
  }

  /** Send `signal`; resolves with how long the demo took to exit (throws past `timeoutMs`). */
  async stop(signal: NodeJS.Signals, timeoutMs = STOP_TIMEOUT_MS): Promise<number> {
    const started = Date.now();
    if (!this.exit) this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    const outcome = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') throw new Error(`demo still running ${timeoutMs} ms after ${signal}:\n${this.stderr}`);
    return Date.now() - started;
  }

  /** Last resort for after(): never leave a demo running. */
  async kill(): Promise<void> {
    if (this.exit) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** Direct children of `pid` (Linux /proc), with their command names. */
async function childrenOf(pid: number): Promise<{ pid: number; comm: string }[]> {
  const found: { pid: number; comm: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close === -1) continue;
    const ppid = Number(stat.slice(close + 2).split(' ')[1]);
    if (ppid === pid) found.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, close) });
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function acceptsTcp(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1000, () => (socket.destroy(), resolve(false)));
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

function run(cmd: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 20000 }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === 'number'
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin!.end(input ?? '');
  });
}

const dig = (host: string, port: number, name: string, type: string) =>
  run(requireBinary('dig'), [`@${host}`, '-p', String(port), '+tcp', '+short', '+time=3', '+tries=1', name, type]);

const basicAuth = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

for (const kind of LAB_KINDS) {
  describe(`demo --json (${kind})`, function () {
    this.timeout(120000);
    let demo: DemoProcess | undefined;
    let scratch: string | undefined;

    before(function () {
      requireBinariesOrSkip(this, ['redis-server', ...serverBinaries(kind), 'nsupdate']);
    });
    after(async () => {
      await demo?.kill();
      if (scratch) await removeDir(scratch);
    });

    it('prints one JSON line, serves updates with it, and on SIGINT removes everything', async () => {
      demo = DemoProcess.start(['--json', ...(kind === 'knot' ? [] : ['--nameserver', kind])]);
      const line = (await demo.waitForStdout((s) => s.includes('\n'))).split('\n')[0]!;
      const info = JSON.parse(line) as DemoInfo;

      // The promised shape, exactly.
      expect(info).to.have.all.keys('url', 'config', 'zone', 'nameserver', 'account', 'hostname', 'gateway');
      expect(info.nameserver).to.have.all.keys('kind', 'host', 'port', 'key');
      expect(info.nameserver.key).to.have.all.keys('name', 'algorithm', 'secret');
      expect(info.account).to.have.all.keys('name', 'password');
      expect(info.nameserver.kind).to.equal(kind);
      expect(info.nameserver.host).to.equal('127.0.0.1');
      expect(info.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(path.isAbsolute(info.config)).to.equal(true);
      expect(info.hostname.endsWith(`.${info.zone}`)).to.equal(true);
      expect(Buffer.from(info.nameserver.key.secret, 'base64').length).to.be.at.least(16);
      expect(info.account.password.length).to.be.at.least(8);

      const dir = path.dirname(info.config);
      expect(dir.startsWith(os.tmpdir())).to.equal(true);
      expect(await exists(dir)).to.equal(true);
      const config = JSON.parse(await readFile(info.config, 'utf8')) as { redis: { url: string } };
      const redisPort = Number(new URL(config.redis.url).port);
      const httpPort = Number(new URL(info.url).port);
      expect(await acceptsTcp('127.0.0.1', redisPort)).to.equal(true);
      expect(await acceptsTcp(info.nameserver.host, info.nameserver.port)).to.equal(true);

      // The servers it started are its own children.
      const children = await childrenOf(demo.child.pid!);
      const names = children.map((c) => c.comm).join(' ');
      expect(names).to.match(/redis-server/);
      expect(names).to.match(new RegExp(DAEMONS[kind]));

      // Its zone's own records (mail) are static names in its config: no drift on a fresh demo (issue 30).
      const drift = await runCli(['reconcile', '--config', info.config]);
      expect(drift.stdout, drift.stderr).to.equal('in agreement: 1 zone, 1 host\n');
      expect(drift.code).to.equal(0);

      // An update through the printed url with the printed account.
      const { hostname, account } = info;
      const request =
        `GET /nic/update?hostname=${hostname}&myip=203.0.113.7 HTTP/1.1\r\nHost: 127.0.0.1:${httpPort}\r\n` +
        `User-Agent: ${UA}\r\nAuthorization: ${basicAuth(account.name, account.password)}\r\nConnection: close\r\n\r\n`;
      const reply = parseHttp(await rawRequest('127.0.0.1', httpPort, request));
      expect(reply.status).to.equal(200);
      expect(reply.body).to.equal('good 203.0.113.7\n');
      const wrong = parseHttp(
        await rawRequest(
          '127.0.0.1',
          httpPort,
          request.replace(basicAuth(account.name, account.password), basicAuth(account.name, 'not-it')),
        ),
      );
      expect(wrong.status).to.equal(401);

      // The printed nameserver publishes it.
      const a = await dig(info.nameserver.host, info.nameserver.port, hostname, 'A');
      expect(a.code, a.stderr).to.equal(0);
      expect(a.stdout.trim()).to.equal('203.0.113.7');

      // The printed key is the one the nameserver accepts (a signed nsupdate with it).
      scratch = await makeTempDir('ddns-demo-test-');
      const keyFile = await writeKeyFile(path.join(scratch, 'demo.key'), {
        name: info.nameserver.key.name,
        algorithm: info.nameserver.key.algorithm as 'hmac-sha256',
        secret: info.nameserver.key.secret,
      });
      const probe = `probe-${process.pid}.${info.zone}`;
      const ns = await run(
        requireBinary('nsupdate'),
        ['-k', keyFile, '-t', '5'],
        `server ${info.nameserver.host} ${info.nameserver.port}\nzone ${info.zone}\nupdate add ${probe} 60 A 192.0.2.123\nsend\n`,
      );
      expect(ns.code, ns.stdout + ns.stderr).to.equal(0);
      expect((await dig(info.nameserver.host, info.nameserver.port, probe, 'A')).stdout.trim()).to.equal('192.0.2.123');

      // The printed gateway and the host's key: nsupdate changes the host through the bridge.
      const gw = await run(
        requireBinary('nsupdate'),
        ['-k', info.gateway.keyFile, '-t', '5'],
        `server ${info.gateway.host} ${info.gateway.port}\nupdate add ${hostname} 60 A 203.0.113.8\nsend\n`,
      );
      expect(gw.code, gw.stdout + gw.stderr).to.equal(0);
      expect((await dig(info.nameserver.host, info.nameserver.port, hostname, 'A')).stdout.trim()).to.equal(
        '203.0.113.8',
      );
      const back = await run(
        requireBinary('nsupdate'),
        ['-k', info.gateway.keyFile, '-t', '5'],
        `server ${info.gateway.host} ${info.gateway.port}\nupdate add ${hostname} 60 A 203.0.113.7\nsend\n`,
      );
      expect(back.code, back.stdout + back.stderr).to.equal(0);

      // The printed config works with the CLI.
      const shown = await runCli(['host', 'show', hostname, '--json', '--config', info.config]);
      expect(shown.code, shown.stderr).to.equal(0);
      const host = JSON.parse(shown.stdout) as Record<string, unknown>;
      expect(host).to.include({ fqdn: hostname, owner: account.name, state: 'active', ipv4: '203.0.113.7' });
      expect(host.addresses).to.deep.equal(['203.0.113.7']);
      const check = await runCli(['check', '--config', info.config]);
      expect(check.code, check.stderr).to.equal(0);
      expect(check.stdout).to.include(`zone ${info.zone}`);

      // mx targets inside the demo zone resolve through its own nameserver (SPEC §11).
      const mxReply = parseHttp(
        await rawRequest(
          '127.0.0.1',
          httpPort,
          request.replace('myip=203.0.113.7', `myip=203.0.113.7&mx=mail.${info.zone}`),
        ),
      );
      expect(mxReply.body).to.equal('good 203.0.113.7\n');
      expect((await dig(info.nameserver.host, info.nameserver.port, hostname, 'MX')).stdout.trim()).to.equal(
        `10 mail.${info.zone}.`,
      );

      // Ctrl-C: it stops within a few seconds and leaves nothing behind.
      await demo.stop('SIGINT');
      expect(demo.exit!.signal, demo.stderr).to.equal(null);
      expect(demo.exit!.code, demo.stderr).to.equal(0);
      expect(demo.stdout).to.equal(line + '\n');
      expect(await exists(dir), `${dir} removed`).to.equal(false);
      for (const c of children) expect(isAlive(c.pid), `${c.comm} (pid ${c.pid}) stopped`).to.equal(false);
      expect(await acceptsTcp('127.0.0.1', redisPort), 'redis port closed').to.equal(false);
      expect(await acceptsTcp(info.nameserver.host, info.nameserver.port), 'nameserver port closed').to.equal(false);
      expect(await acceptsTcp('127.0.0.1', httpPort), 'bridge port closed').to.equal(false);
      // The secrets it printed on stdout are not repeated on stderr (its log).
      expect(demo.stderr).to.not.include(info.nameserver.key.secret);
      expect(demo.stderr).to.not.include(account.password);
    });
  });
}

describe('demo (plain text, --port, SIGTERM)', function () {
  this.timeout(120000);
  let demo: DemoProcess | undefined;

  before(function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig', 'curl']);
  });
  after(async () => demo?.kill());

  it('prints a ready-to-paste curl update and dig query that work as printed; SIGTERM cleans up', async () => {
    const port = await freePort();
    demo = DemoProcess.start(['--port', String(port)]);
    const text = await demo.waitForStdout((s) => /Ctrl-C/.test(s));
    const lines = text.split('\n');
    const curlLine = lines.find((l) => /^\s*curl .*update\?/.test(l));
    const digLine = lines.find((l) => /^\s*dig /.test(l));
    const configLine = lines.find((l) => /^\s*config:/.test(l));
    expect(curlLine, text).to.be.a('string');
    expect(digLine, text).to.be.a('string');
    expect(configLine, text).to.be.a('string');
    expect(curlLine).to.include(`http://127.0.0.1:${port}/`);
    const configPath = configLine!.replace(/^\s*config:\s*/, '').trim();
    const dir = path.dirname(configPath);
    expect(await exists(configPath)).to.equal(true);

    // Pasted into a shell, as the user would.
    const curl = await run('/bin/sh', ['-c', curlLine!.trim() + ' -sS']);
    expect(curl.code, curl.stderr).to.equal(0);
    expect(curl.stdout).to.equal('good 203.0.113.7\n');
    const digged = await run('/bin/sh', ['-c', digLine!.trim()]);
    expect(digged.code, digged.stderr).to.equal(0);
    expect(digged.stdout.trim()).to.equal('203.0.113.7');
    const again = await run('/bin/sh', ['-c', curlLine!.trim() + ' -sS']);
    expect(again.stdout).to.equal('nochg 203.0.113.7\n');

    const children = await childrenOf(demo.child.pid!);
    expect(children.length).to.be.at.least(2);
    await demo.stop('SIGTERM');
    expect(demo.exit!.code, demo.stderr).to.equal(0);
    expect(await exists(dir)).to.equal(false);
    for (const c of children) expect(isAlive(c.pid), `${c.comm} (pid ${c.pid}) stopped`).to.equal(false);
    expect(await acceptsTcp('127.0.0.1', port)).to.equal(false);
  });
});

describe('demo --json --port 0', function () {
  this.timeout(120000);
  let demo: DemoProcess | undefined;

  before(function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
  });
  after(async () => demo?.kill());

  it('reports the port it bound, in the url and in the config; updates work through it', async () => {
    demo = DemoProcess.start(['--json', '--port', '0']);
    const line = (await demo.waitForStdout((s) => s.includes('\n'))).split('\n')[0]!;
    const info = JSON.parse(line) as DemoInfo;
    expect(info.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(info.url).port);
    expect(port).to.be.greaterThan(0);
    const config = JSON.parse(await readFile(info.config, 'utf8')) as { listen: string[] };
    expect(config.listen).to.deep.equal([`127.0.0.1:${port}`]);

    const request =
      `GET /nic/update?hostname=${info.hostname}&myip=203.0.113.9 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      `User-Agent: ${UA}\r\nAuthorization: ${basicAuth(info.account.name, info.account.password)}\r\nConnection: close\r\n\r\n`;
    const reply = parseHttp(await rawRequest('127.0.0.1', port, request));
    expect(reply.body).to.equal('good 203.0.113.9\n');

    await demo.stop('SIGTERM');
    expect(demo.exit!.code, demo.stderr).to.equal(0);
    expect(await acceptsTcp('127.0.0.1', port)).to.equal(false);
  });
});

/**
 * Processes that name `dir` in their command line or run in it: the demo's servers all do
 * (redis-server rewrites its command line, but runs in its --dir; a deleted one still shows).
 */
async function processesMentioning(dir: string): Promise<{ pid: number; cmdline: string }[]> {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (cmdline.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`) || cwd.startsWith(`${dir} `))
      found.push({ pid: Number(entry), cmdline });
  }
  return found;
}

describe('demo: a signal during start-up', function () {
  this.timeout(120000);
  let demo: DemoProcess | undefined;
  let dir: string | undefined;

  before(function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
  });
  afterEach(async () => {
    // Never leave anything behind, whatever the outcome.
    await demo?.kill();
    if (dir) {
      for (const p of await processesMentioning(dir)) {
        if (p.pid !== process.pid && isAlive(p.pid)) process.kill(p.pid, 'SIGKILL');
      }
      await removeDir(dir);
    }
    demo = undefined;
    dir = undefined;
  });

  /** Resolves with the working directory once the demo announces it (it exists then). */
  async function workingDirectory(d: DemoProcess): Promise<string> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const m = /demo: working directory (\S+)/.exec(d.stderr);
      if (m) return m[1]!;
      if (d.exit)
        throw new Error(`demo exited (${JSON.stringify(d.exit)}) before it named its directory:\n${d.stderr}`);
      if (Date.now() > deadline) throw new Error(`no working directory after ${READY_TIMEOUT_MS} ms:\n${d.stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** What an interrupted start-up must leave: nothing, and a normal exit. */
  async function expectNothingLeft(
    d: DemoProcess,
    workDir: string,
    children: { pid: number; comm: string }[],
  ): Promise<void> {
    expect(await processesMentioning(workDir), 'processes naming the working directory').to.deep.equal([]);
    for (const c of children) expect(isAlive(c.pid), `${c.comm} (pid ${c.pid}) stopped`).to.equal(false);
    expect(await exists(workDir), `${workDir} removed`).to.equal(false);
    expect(d.exit!.signal, d.stderr).to.equal(null);
    expect(d.exit!.code, d.stderr).to.equal(0);
    expect(d.stdout, 'never ready: nothing printed').to.equal('');
    expect(d.stderr).to.not.match(/Error| {4}at /);
  }

  it('SIGTERM as soon as the working directory exists: servers stopped, directory removed, exit 0', async () => {
    demo = DemoProcess.start(['--json']);
    dir = await workingDirectory(demo);
    await demo.stop('SIGTERM', 30000);
    await expectNothingLeft(demo, dir, []);
  });

  // SIGHUP: a closed terminal or a dropped ssh session.
  for (const signal of ['SIGINT', 'SIGHUP'] as const) {
    it(`${signal} once its first server runs: servers stopped, directory removed, exit 0`, async () => {
      demo = DemoProcess.start(['--json']);
      dir = await workingDirectory(demo);
      let children: { pid: number; comm: string }[] = [];
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (!children.some((c) => c.comm === 'redis-server')) {
        if (demo.exit || Date.now() > deadline) throw new Error(`redis-server never started:\n${demo.stderr}`);
        children = await childrenOf(demo.child.pid!);
      }
      await demo.stop(signal, 30000);
      await expectNothingLeft(demo, dir, children);
    });
  }
});
