/**
 * The real `serve` process with a plain and an HTTPS listener side by side (certificate from a
 * TestCa), on a BridgeEnv's Redis and nameserver; TLS clients that report which certificate
 * they were shown; the serve log as parsed lines to wait on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';
import { freePort, type LabKind } from '../../src/lab/index.js';
import { BridgeEnv, CLI, ZONE, deepMerge, sleep } from './bridge.js';
import { TestCa, type IssuedCertificate } from './test-ca.js';

export type LogLine = Record<string, unknown> & { msg?: string };

/** The in-zone MX target with an address, as startInteropEnv has it. */
const MAIL_RECORD = `mail.${ZONE}. 60 IN A 192.0.2.25`;

export interface TlsBridgeOptions {
  kind?: LabKind;
  /** `serve --workers N` */
  workers?: number;
  /** Deep-merged over the BridgeEnv config. */
  config?: Record<string, unknown>;
}

export class TlsBridge {
  private stderr = '';
  private constructor(
    readonly env: BridgeEnv,
    readonly ca: TestCa,
    readonly caPem: Buffer,
    /** The files the config names; a test swaps certificates by copying over them. */
    readonly certFile: string,
    readonly keyFile: string,
    readonly plainPort: number,
    readonly tlsPort: number,
    readonly serve: ChildProcess,
  ) {
    serve.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    serve.stdout!.resume();
  }

  /**
   * A BridgeEnv (frequency intervals short, as for the interop clients) whose serve process has
   * `listen: ["127.0.0.1:P", {host: "127.0.0.1", port: T, tls: {…}}]` with the certificate
   * `first` of a fresh CA; `workers` > 1 runs `serve --workers N`.
   */
  static async start(opts: TlsBridgeOptions = {}): Promise<TlsBridge> {
    const interop = {
      frequency: { minInterval: 0.05, donatorMinInterval: 0.05, echoMinInterval: 0.05 },
      dns: { timeout: 5 },
    };
    const env = await BridgeEnv.start({
      kind: opts.kind ?? 'knot',
      serves: 0,
      config: deepMerge(interop, opts.config ?? {}),
      records: [MAIL_RECORD],
    });
    try {
      const tlsDir = path.join(env.dir, 'tls');
      await mkdir(tlsDir, { mode: 0o700 });
      const ca = await TestCa.create(tlsDir);
      const first = await ca.issue('server-1');
      const certFile = path.join(tlsDir, 'server.pem');
      const keyFile = path.join(tlsDir, 'server.key');
      await installCertificate(first, certFile, keyFile);
      const plainPort = await freePort();
      const tlsPort = await freePort();
      // Relative paths: resolved against the config file's directory, like secretFile.
      await env.writeConfig({
        listen: [
          `127.0.0.1:${plainPort}`,
          { host: '127.0.0.1', port: tlsPort, tls: { certFile: 'tls/server.pem', keyFile: 'tls/server.key' } },
        ],
      });
      const workers = opts.workers ? ['--workers', String(opts.workers)] : [];
      const child = spawn(process.execPath, [CLI, 'serve', '--config', env.configPath, ...workers], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, DDNS_BRIDGE_CONFIG: '' },
      });
      env.serves.push(child);
      const bridge = new TlsBridge(env, ca, await readFile(ca.caFile), certFile, keyFile, plainPort, tlsPort, child);
      // One "listening" line per address (the primary's, with workers).
      await bridge.waitForLog((l) => l.msg === 'listening', 2);
      return bridge;
    } catch (err) {
      await env.stop();
      throw err;
    }
  }

  /** The serve process's (and its workers') log lines so far. */
  log(): LogLine[] {
    return this.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  }

  logText(): string {
    return this.stderr;
  }

  /** Resolves once `count` lines after the first `since` lines match; fails if serve exits first. */
  async waitForLog(match: (l: LogLine) => boolean, count = 1, since = 0): Promise<LogLine[]> {
    const deadline = Date.now() + 20000;
    for (;;) {
      const found = this.log().slice(since).filter(match);
      if (found.length >= count) return found;
      if (this.serve.exitCode !== null || this.serve.signalCode !== null) {
        throw new Error(`serve exited (${this.serve.exitCode ?? this.serve.signalCode}): ${this.stderr.slice(-2000)}`);
      }
      if (Date.now() > deadline) throw new Error(`no such log line after 20 s: ${this.stderr.slice(-2000)}`);
      await sleep(20);
    }
  }

  /** Put `cert` where the config points (the old files overwritten, as a renewal does). */
  install(cert: IssuedCertificate): Promise<void> {
    return installCertificate(cert, this.certFile, this.keyFile);
  }

  /** SIGHUP to the serve process; resolves with the `reloaded` lines of `processes` processes. */
  async reload(processes = 1): Promise<LogLine[]> {
    const since = this.log().length;
    this.serve.kill('SIGHUP');
    return this.waitForLog((l) => l.msg === 'reloaded', processes, since);
  }

  /** One request over TLS (trusting the test CA) on its own connection. */
  request(request: string | Buffer, opts: TlsClientOptions = {}): Promise<TlsExchange> {
    return tlsExchange(this.tlsPort, this.caPem, request, opts);
  }

  /**
   * SIGTERM, and wait for the process (and with it its workers) to end; one that has not ended
   * 10 s later (a test failed with a stop that hangs) is killed, so the suite still ends.
   */
  async stopServe(): Promise<void> {
    const child = this.serve;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(killer);
    }
  }

  async stop(): Promise<void> {
    await this.stopServe();
    await this.env.stop();
  }
}

async function installCertificate(cert: IssuedCertificate, certFile: string, keyFile: string): Promise<void> {
  await copyFile(cert.certFile, certFile);
  await copyFile(cert.keyFile, keyFile);
  await chmod(keyFile, 0o600);
}

export interface TlsClientOptions {
  minVersion?: tls.SecureVersion;
  maxVersion?: tls.SecureVersion;
  ciphers?: string;
  /** Called once the handshake is done, before the request is sent (a connection held open). */
  beforeSend?: () => Promise<void>;
  /** Send the request with our end of the connection closed behind it (`printf … | nc` style). */
  halfClose?: boolean;
}

export interface TlsExchange {
  reply: Buffer;
  /** The SHA-256 fingerprint of the certificate the server presented. */
  fingerprint256: string;
  protocol: string | null;
}

/** Connect to 127.0.0.1:`port` over TLS, verify the server against `ca`, send `request`, read until it closes. */
export function tlsExchange(
  port: number,
  ca: Buffer,
  request: string | Buffer,
  opts: TlsClientOptions = {},
): Promise<TlsExchange> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      ca,
      minVersion: opts.minVersion,
      maxVersion: opts.maxVersion,
      ciphers: opts.ciphers,
    });
    socket.setTimeout(15000, () => socket.destroy(new Error('timeout waiting for the reply')));
    let fingerprint256 = '';
    let protocol: string | null = null;
    socket.once('secureConnect', () => {
      fingerprint256 = socket.getPeerCertificate().fingerprint256;
      protocol = socket.getProtocol();
      void (opts.beforeSend ?? (async () => undefined))().then(
        () => (opts.halfClose ? socket.end(request) : socket.write(request)),
        (err: unknown) => socket.destroy(err as Error),
      );
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    const done = (): void => resolve({ reply: Buffer.concat(chunks), fingerprint256, protocol });
    socket.once('end', done);
    socket.once('close', (hadError) => hadError || done());
    socket.once('error', reject);
  });
}
