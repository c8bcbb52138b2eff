/**
 * End-to-end harness: a private redis-server and nameserver (lab), a generated config,
 * and the real `ddns-bridge serve` process(es). Helpers for raw-socket requests, the CLI
 * and reading Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile, chmod } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  generateTsigKey,
  makeTempDir,
  removeDir,
  startNameServer,
  startPrimaryWithSecondaries,
  startRedis,
  type LabKind,
  type LabSecondary,
  type SecondaryKind,
  type NameServer,
  type RedisServer,
} from '../../src/lab/index.js';
import type { ScryptCost } from '../../src/auth/index.js';
import { accountAdd, hostAdd, hostShow } from '../../src/cli/commands/admin.js';
import { contextOf, type CommandContext } from '../../src/cli/context.js';
import { loadConfig } from '../../src/config/load.js';
import type { TsigAlgorithm } from '../../src/config/schema.js';
import { AGENT_LIST_CACHE_MS } from '../../src/store/client-policy.js';
import { waitFor } from './wait.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CLI = path.join(ROOT, 'dist/src/cli/main.js');
export const ZONE = 'dyn.example.test';

/**
 * The scrypt cost of the passwords the tests' in-process commands set (addAccount): 3 ms a hash here, against
 * 160 ms at account add's own (DEFAULT_SCRYPT_COST, memory-bound on this VM), paid again by every serve process at
 * each account's first login. The cost is part of the stored hash, so the bridge verifies these as any other; the
 * CLI's own cost is what the CLI tests (a spawned `account add`) and the unit tests check.
 */
export const TEST_PASSWORD_COST: ScryptCost = { ln: 10, r: 8, p: 1 };

/**
 * A config for tests about Redis and the CLI only: `redis` as given, one zone whose primary
 * (127.0.0.1:1) nobody answers, a fresh TSIG key in `dir`/tsig.secret. Written to
 * `dir`/`name`.json (mode 0600) with `extra` merged in; returns its path.
 */
export async function writeRedisOnlyConfig(
  dir: string,
  redis: Record<string, unknown>,
  opts: { name?: string; extra?: Record<string, unknown> } = {},
): Promise<string> {
  const key = generateTsigKey('ddns-key', 'hmac-sha256');
  await writeFile(path.join(dir, 'tsig.secret'), key.secret + '\n', { mode: 0o600 });
  const config = deepMerge(
    {
      listen: ['127.0.0.1:0'],
      redis: { keyPrefix: 'ddns:', ...redis },
      zones: [
        {
          name: ZONE,
          primary: '127.0.0.1:1',
          key: { name: key.name, algorithm: key.algorithm, secretFile: 'tsig.secret' },
        },
      ],
    },
    opts.extra ?? {},
  );
  const file = path.join(dir, `${opts.name ?? 'config'}.json`);
  await writeFile(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface HttpResult {
  raw: Buffer;
  status: number;
  statusLine: string;
  headers: Record<string, string>;
  body: string;
}

export interface BridgeEnvOptions {
  kind?: LabKind;
  /** Deep-merged over the generated config. */
  config?: Record<string, unknown>;
  /**
   * The RFC 2136 gateway on a free loopback port (`gatewayPort`), its master secret in `dir`/gateway.key. Started by
   * every serve process (use one serve, or `--workers`).
   */
  gateway?: boolean;
  /** Number of serve processes on the same Redis (each on its own port). */
  serves?: number;
  /** Extra zone-file lines for the nameserver. */
  records?: string[];
  /** TSIG algorithm of the zone key (default hmac-sha256). */
  algorithm?: TsigAlgorithm;
  /** Put a counting TCP proxy between the bridge and the primary (see `dnsMessages`). */
  countDns?: boolean;
  /** The bridge reaches Redis over its Unix socket instead of loopback TCP. */
  redisOverUnixSocket?: boolean;
  /**
   * Secondaries of the zone (src/lab/secondary.ts: NOTIFY and IXFR from the primary), listed in
   * `zones[0].secondaries`; `dnssecSigning`: the primary signs the zone (Knot dnssec-signing, BIND inline-signing).
   */
  secondaries?: { kinds: SecondaryKind[]; dnssecSigning?: boolean };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isObject(v) && isObject(out[k]) ? deepMerge(out[k], v) : v;
  return out;
}

export class BridgeEnv {
  readonly serves: ChildProcess[] = [];
  readonly ports: number[] = [];
  readonly logs: string[] = [];
  private constructor(
    readonly dir: string,
    readonly redis: RedisServer,
    readonly ns: NameServer,
    readonly configPath: string,
    readonly config: Record<string, unknown>,
    private readonly proxy?: DnsCountingProxy,
    /** The zone's secondaries (BridgeEnvOptions.secondaries), in the order asked. */
    readonly secondaries: readonly LabSecondary[] = [],
  ) {}

  /**
   * Delay what the serve processes send to the primary by `ms` (needs countDns; the CLI via cliDirect is not
   * delayed).
   */
  delayDns(ms: number): void {
    if (!this.proxy) throw new Error('start the env with countDns: true');
    this.proxy.delayMs = ms;
  }

  /** Run the CLI with the config, but talking to the primary directly (not through the counting proxy). */
  async cliDirect(args: string[], stdin?: string): Promise<CliResult> {
    const direct = path.join(this.dir, 'config-direct.json');
    const zones = (this.config['zones'] as Record<string, unknown>[]).map((z) => ({
      ...z,
      primary: `127.0.0.1:${this.ns.port}`,
    }));
    await writeFile(direct, JSON.stringify({ ...this.config, zones }, null, 2));
    await chmod(direct, 0o600);
    return runCli([...args, '--config', direct], stdin);
  }

  /**
   * DNS messages (by opcode: 'update', 'query') the bridge sent to the primary for hosts; the
   * readiness probes are not counted (needs countDns).
   */
  dnsMessages(opcode: 'update' | 'query' = 'update'): number {
    if (!this.proxy) throw new Error('start the env with countDns: true');
    return this.proxy.counts[opcode];
  }

  get port(): number {
    return this.ports[0]!;
  }

  /** The gateway's port (UDP and TCP), with `gateway: true`. */
  get gatewayPort(): number {
    const listen = (this.config.gateway as { listen: string[] } | undefined)?.listen[0];
    if (listen === undefined) throw new Error('start the env with gateway: true');
    return Number(listen.split(':').pop());
  }

  static async start(opts: BridgeEnvOptions = {}): Promise<BridgeEnv> {
    const dir = await makeTempDir('ddns-e2e-');
    const redis = await startRedis({ dir, appendonly: false });
    const key = generateTsigKey('ddns-key', opts.algorithm ?? 'hmac-sha256');
    const nsOptions = { dir, zone: ZONE, key, records: opts.records };
    let ns: NameServer;
    let secondaries: LabSecondary[] = [];
    if (opts.secondaries) {
      const kind = opts.kind ?? 'knot';
      if (kind === 'pdns') throw new Error('BridgeEnv: secondaries need a knot or bind primary');
      const started = await startPrimaryWithSecondaries(
        kind,
        { ...nsOptions, ...(opts.secondaries.dnssecSigning ? { dnssecSigning: true } : {}) },
        await Promise.all(
          opts.secondaries.kinds.map(async (k, i) => ({ kind: k, dir: await makeTempDir(`ddns-e2e-secondary-${i}-`) })),
        ),
      );
      ns = started.primary;
      secondaries = started.secondaries;
    } else ns = await startNameServer(opts.kind ?? 'knot', nsOptions);
    await writeFile(path.join(dir, 'tsig.secret'), key.secret + '\n');
    await chmod(path.join(dir, 'tsig.secret'), 0o600);
    const proxy = opts.countDns ? await DnsCountingProxy.start(ns.port) : undefined;
    const base: Record<string, unknown> = {
      listen: ['127.0.0.1:0'],
      redis: { url: opts.redisOverUnixSocket ? redis.socketUrl : redis.url, keyPrefix: 'ddns:' },
      zones: [
        {
          name: ZONE,
          primary: `127.0.0.1:${proxy?.port ?? ns.port}`,
          key: { name: key.name, algorithm: key.algorithm, secretFile: 'tsig.secret' },
          ...(secondaries.length === 0 ? {} : { secondaries: secondaries.map((s) => `${s.host}:${s.port}`) }),
        },
      ],
      mx: { resolvers: [`127.0.0.1:${ns.port}`], timeout: 1 },
      log: { level: 'debug' },
    };
    if (opts.gateway) {
      await writeFile(path.join(dir, 'gateway.key'), randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
      base.gateway = { listen: [`127.0.0.1:${await freePort()}`], keyFile: 'gateway.key' };
    }
    const config = deepMerge(base, opts.config ?? {});
    const configPath = path.join(dir, 'config.json');
    await writeFile(configPath, JSON.stringify(config, null, 2));
    await chmod(configPath, 0o600);
    const env = new BridgeEnv(dir, redis, ns, configPath, config, proxy, secondaries);
    for (let i = 0; i < (opts.serves ?? 1); i++) await env.startServe();
    return env;
  }

  /**
   * Rewrite the config file as the start config with `patch` merged in (mode 0600), for the
   * serve and CLI processes started after it. `config` stays the start config (cliDirect uses it).
   */
  async writeConfig(patch: Record<string, unknown>): Promise<void> {
    await writeFile(this.configPath, JSON.stringify(deepMerge(this.config, patch), null, 2));
    await chmod(this.configPath, 0o600);
  }

  /** Start one more `serve` process on a free port; resolves when it listens. */
  async startServe(): Promise<number> {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', '--config', this.configPath, '--port', String(port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DDNS_BRIDGE_CONFIG: '' },
    });
    this.serves.push(child);
    this.ports.push(port);
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${buf.slice(-2000)}`)), 15000);
      const onData = (d: Buffer) => {
        buf += d.toString();
        this.logs.push(d.toString());
        if (buf.includes('"listening"')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stderr.on('data', onData);
      child.stdout.on('data', (d: Buffer) => this.logs.push(d.toString()));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`serve exited with ${code}: ${buf.slice(-2000)}`));
      });
    });
    return port;
  }

  async stopServes(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await Promise.all(
      this.serves.splice(0).map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill(signal);
          }),
      ),
    );
    this.ports.splice(0);
  }

  async stop(): Promise<void> {
    await this.stopServes('SIGKILL');
    this.proxy?.close();
    await this.ns.stop().catch(() => undefined);
    await Promise.all(
      this.secondaries.map(async (s) => {
        await s.stop().catch(() => undefined);
        await removeDir(s.dir);
      }),
    );
    await this.redis.stop().catch(() => undefined);
    await removeDir(this.dir);
  }

  cli(args: string[], stdin?: string): Promise<CliResult> {
    return runCli([...args, '--config', this.configPath], stdin);
  }

  async cliOk(args: string[], stdin?: string): Promise<string> {
    const r = await this.cli(args, stdin);
    if (r.code !== 0) throw new Error(`ddns-bridge ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  }

  /**
   * Run one of the CLI's command functions in this process, on the config file as `cli` would (read again each
   * time: writeConfig may have changed it); resolves with what it printed. For set-up and reads in tests that are
   * not about the CLI process (the suites about it, cli.test.ts first, spawn it): a spawned CLI spends about 0.5 s of
   * CPU loading modules, and these helpers ran over a thousand times per `npm test`. A failure throws with the
   * command's log lines, as cliOk does with its stderr.
   */
  async inProcess(
    what: string,
    run: (ctx: CommandContext, out: (line: string) => void) => Promise<void>,
  ): Promise<string> {
    const log: string[] = [];
    const printed: string[] = [];
    try {
      const ctx = contextOf(await loadConfig(this.configPath, process.env), (line) => log.push(line));
      ctx.passwordCost = TEST_PASSWORD_COST;
      await run(ctx, (line) => printed.push(line + '\n'));
    } catch (err) {
      throw new Error(`ddns-bridge ${what} failed: ${(err as Error).message}\n${log.join('')}`);
    }
    return printed.join('');
  }

  /** `account add NAME [--donator]` with the password given, hashed at `passwordCost`. */
  async addAccount(
    name: string,
    password: string,
    donator = false,
    passwordCost: ScryptCost = TEST_PASSWORD_COST,
  ): Promise<void> {
    await this.inProcess(`account add ${name}`, (ctx, out) => {
      ctx.passwordCost = passwordCost;
      return accountAdd(ctx, name, donator, out, async () => password);
    });
  }

  /** `host add FQDN --account ACCOUNT --type TYPE`. */
  async addHost(fqdn: string, account: string, type = 'dynamic'): Promise<void> {
    await this.inProcess(`host add ${fqdn}`, (ctx, out) => hostAdd(ctx, fqdn, account, type, out));
  }

  /** `host show FQDN --json`, parsed. */
  async hostJson(fqdn: string): Promise<Record<string, unknown>> {
    const printed = await this.inProcess(`host show ${fqdn}`, (ctx, out) => hostShow(ctx, fqdn, true, out));
    return JSON.parse(printed) as Record<string, unknown>;
  }

  /** Send raw bytes to a serve process; resolve with everything it answered before closing. */
  raw(request: string | Buffer, port = this.port, host = '127.0.0.1'): Promise<Buffer> {
    return rawRequest(host, port, request);
  }

  /** A GET with Basic auth and a User-Agent, over a raw socket. */
  async get(
    pathAndQuery: string,
    opts: { auth?: [string, string]; ua?: string | null; headers?: string[]; port?: number } = {},
  ): Promise<HttpResult> {
    const lines = [`GET ${pathAndQuery} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
    if (opts.ua !== null) lines.push(`User-Agent: ${opts.ua ?? 'ddns-bridge-tests/1.0 tests@example.test'}`);
    if (opts.auth)
      lines.push(`Authorization: Basic ${Buffer.from(`${opts.auth[0]}:${opts.auth[1]}`).toString('base64')}`);
    lines.push(...(opts.headers ?? []));
    return parseHttp(await this.raw(lines.join('\r\n') + '\r\n\r\n', opts.port));
  }

  /**
   * Wait until every serve process's copy of the shared User-Agent block list (refetched every
   * AGENT_LIST_CACHE_MS) refuses `ua`, or with `blocked` false no longer does. The probe has no
   * credentials: it is answered badagent when the agent is refused and badauth otherwise (a
   * challenge, neither a failure nor junk), and changes nothing.
   */
  async untilAgentBlocked(ua: string, blocked = true): Promise<void> {
    const want = blocked ? 'badagent\n' : 'badauth\n';
    for (const port of this.ports) {
      await waitFor(async () => (await this.get('/nic/update?hostname=x', { ua, port })).body === want, {
        what: `the serve process on port ${port} to answer ${want.trim()} for the agent ${ua}`,
        timeoutMs: 2 * AGENT_LIST_CACHE_MS + 1000,
        intervalMs: 50,
      });
    }
  }
}

export function runCli(args: string[], stdin?: string, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

export function rawRequest(host: string, port: number, request: string | Buffer, timeoutMs = 15000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host, port });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error('timeout waiting for reply')));
    socket.on('connect', () => socket.write(request));
    socket.on('data', (d) => chunks.push(d));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.on('error', (e) => (chunks.length ? resolve(Buffer.concat(chunks)) : reject(e)));
  });
}

export function parseHttp(raw: Buffer): HttpResult {
  const text = raw.toString('utf8');
  const sep = text.indexOf('\r\n\r\n');
  const head = sep === -1 ? text : text.slice(0, sep);
  const body = sep === -1 ? '' : text.slice(sep + 4);
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of headerLines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { raw, status: Number(statusLine.split(' ')[1]), statusLine, headers, body };
}

/** The exact bytes every reply must be for a given status/body (docs/protocol.md, "The reply"). */
export function expectedReply(status: number, reason: string, body: string, extra: string[] = []): string {
  return (
    `HTTP/1.0 ${status} ${reason}\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n' +
    extra.map((h) => h + '\r\n').join('') +
    '\r\n' +
    body
  );
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A TCP relay in front of the primary that counts the DNS messages passing towards it (by
 * opcode), so a test can tell "no DNS traffic" apart from "an UPDATE that changed nothing".
 */
export class DnsCountingProxy {
  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly counts: { update: number; query: number; probe: number },
  ) {}

  /** Hold each chunk towards the primary this long (0: pass at once). */
  delayMs = 0;

  static async start(targetPort: number): Promise<DnsCountingProxy> {
    const counts = { update: 0, query: 0, probe: 0 };
    const sockets = new Set<net.Socket>();
    // Assigned once, after the server whose connections read it exists.
    // eslint-disable-next-line prefer-const
    let proxy: DnsCountingProxy | undefined;
    const server = net.createServer((client) => {
      const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      let pending = Buffer.alloc(0);
      client.on('data', (d: Buffer) => {
        pending = Buffer.concat([pending, d]);
        while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
          const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
          const opcode = ((msg[2] ?? 0) >> 3) & 0xf;
          // The readiness monitor's background probes (src/dns/probe.ts: one UPDATE with an empty
          // update section, one about `ddns-bridge-check`) are not the bridge's host changes.
          if (opcode === 5 && (msg.readUInt16BE(8) === 0 || msg.includes('ddns-bridge-check'))) counts.probe++;
          else if (opcode === 5) counts.update++;
          else if (opcode === 0) counts.query++;
          pending = pending.subarray(2 + msg.length);
        }
        const delay = proxy?.delayMs ?? 0;
        if (delay > 0) setTimeout(() => upstream.write(d), delay);
        else upstream.write(d);
      });
      upstream.on('data', (d: Buffer) => client.write(d));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.on('close', () => sockets.forEach((s) => s.destroy()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    proxy = new DnsCountingProxy(server, (server.address() as net.AddressInfo).port, counts);
    return proxy;
  }

  close(): void {
    this.server.close();
  }
}

/** The Retry-After of 911 and dnserr is 10–19 s, jittered: `1x` stands for it after normalizeRetryAfter. */
export const RETRY_LATER = 'Retry-After: 1x';

/** A raw reply with its jittered Retry-After (10–19) written as RETRY_LATER, so exact-byte checks still hold. */
export function normalizeRetryAfter(raw: string): string {
  return raw.replace(/\r\nRetry-After: 1\d\r\n/, `\r\n${RETRY_LATER}\r\n`);
}
