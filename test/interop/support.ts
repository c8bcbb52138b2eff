/**
 * Launch helpers for the real DDNS clients (ddclient, inadyn, wget, curl) against a running
 * bridge. Every secret goes into a mode-0600 file in a private directory, never into argv.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { writePrivateFile, requireBinariesOrSkip, type LabKind } from '../../src/lab/index.js';
import { BridgeEnv, ZONE, deepMerge, parseHttp, type BridgeEnvOptions, type HttpResult } from '../support/bridge.js';

export interface ProcResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr in arrival order. */
  output: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Run a client to completion; it is killed (by its pid) after the timeout. */
export function runProcess(cmd: string, args: string[], opts: RunOptions = {}): Promise<ProcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      output += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, output });
    });
  });
}

/** Client output for assertion messages, with Basic credentials blanked out. */
export function redact(text: string): string {
  return text.replace(/(Authorization:\s*Basic\s+)\S+/gi, '$1<redacted>');
}

/** A fresh private directory for one client run, inside the env's temp dir (removed with it). */
export function clientDir(env: BridgeEnv, prefix: string): Promise<string> {
  return mkdtemp(path.join(env.dir, `${prefix}-`));
}

/** The lab servers every interop test needs, plus dig for the record checks. */
export const SERVER_BINARIES = ['redis-server', 'knotd', 'named', 'dig'] as const;

/** Mocha: fail under CI=true, skip otherwise, when a server or the given clients are missing. */
export function requireInterop(ctx: { skip(): void }, clients: readonly string[]): void {
  requireBinariesOrSkip(ctx, [...SERVER_BINARIES, ...clients]);
}

// ---- ddclient 3.10 -------------------------------------------------------------------

export interface DdclientOptions {
  port: number;
  login: string;
  password: string;
  /** The address ddclient sends (`use=ip, ip=…`). */
  ip: string;
  /** Host lines as ddclient reads them: `a.example` , `a.example,b.example`, or with per-line options. */
  hostLines: string[];
  script?: string;
}

/** The exact ddclient.conf the tests use (the README snippet). */
export function ddclientConfig(o: DdclientOptions): string {
  return [
    'protocol=dyndns2',
    `server=127.0.0.1:${o.port}`,
    `script=${o.script ?? '/dyndns/update'}`,
    'ssl=no',
    'timeout=10',
    `use=ip, ip=${o.ip}`,
    `login=${o.login}`,
    `password=${o.password}`,
    ...o.hostLines,
    '',
  ].join('\n');
}

/**
 * One foreground run of ddclient. The cache file lives in `dir`; unless `keepCache`, it is
 * removed first so ddclient sends the update even when the address did not change.
 */
export async function runDdclient(
  dir: string,
  config: string,
  opts: { keepCache?: boolean } = {},
): Promise<ProcResult> {
  const conf = path.join(dir, 'ddclient.conf');
  const cache = path.join(dir, 'ddclient.cache');
  await writePrivateFile(conf, config);
  if (!opts.keepCache) await rm(cache, { force: true });
  return runProcess('ddclient', ['-foreground', '-daemon=0', '-verbose', '-noquiet', '-file', conf, '-cache', cache], {
    cwd: dir,
  });
}

// ---- inadyn 2.10 ---------------------------------------------------------------------

export interface InadynOptions {
  port: number;
  username: string;
  password: string;
  hostnames: string[];
  /** How inadyn learns the address: a fixed one (via checkip-command), or our /checkip. */
  address: { fixed: string } | { checkip: '/checkip' | '/ip' | '/nic/checkip' };
  allowIpv6?: boolean;
  /** The update path with inadyn's %h/%i (default: hostname and myip). */
  ddnsPath?: string;
}

/** The exact inadyn.conf the tests use (the README snippet). */
export function inadynConfig(o: InadynOptions): string {
  const names = o.hostnames.length === 1 ? o.hostnames[0]! : `{ ${o.hostnames.map((h) => `"${h}"`).join(', ')} }`;
  const detect =
    'fixed' in o.address
      ? [`    checkip-command = "echo ${o.address.fixed}"`]
      : [
          `    checkip-server = 127.0.0.1:${o.port}`,
          `    checkip-path = ${o.address.checkip}`,
          '    checkip-ssl = false',
        ];
  return [
    // 127.0.0.1 (what our /checkip answers here) is not a "valid Internet address" to inadyn
    ...('checkip' in o.address ? ['verify-address = false'] : []),
    ...(o.allowIpv6 ? ['allow-ipv6 = true'] : []),
    'custom bridge:1 {',
    '    ssl = false',
    `    username = ${o.username}`,
    `    password = ${o.password}`,
    `    ddns-server = 127.0.0.1:${o.port}`,
    `    ddns-path = "${o.ddnsPath ?? '/dyndns/update?hostname=%h&myip=%i'}"`,
    ...detect,
    `    hostname = ${names}`,
    '}',
    '',
  ].join('\n');
}

/** One `inadyn -1 --foreground` run with a fresh cache dir (so it always sends). */
export async function runInadyn(dir: string, config: string): Promise<ProcResult> {
  const conf = path.join(dir, 'inadyn.conf');
  const cache = await mkdtemp(path.join(dir, 'cache-'));
  await writePrivateFile(conf, config);
  return runProcess(
    'inadyn',
    ['-1', '--foreground', '--no-pidfile', '-l', 'debug', `--cache-dir=${cache}`, '-f', conf],
    {
      cwd: dir,
      // inadyn first resolves each host name through the system resolver: fail fast offline
      env: { RES_OPTIONS: 'timeout:1 attempts:1' },
    },
  );
}

/** The update requests inadyn's debug log shows it sent (the request head, one per host). */
export function inadynRequests(output: string): string[] {
  const re = /Sending alias table update to DDNS server: ([\s\S]*?)\n(?=inadyn\[)/g;
  return [...output.matchAll(re)].map((m) => m[1]!);
}

// ---- wget (OpenWrt ddns-scripts flow) --------------------------------------------------

/**
 * `wget -S -O - URL` with the credentials in a private wgetrc (WGETRC): like OpenWrt's
 * wget/uclient-fetch it sends them only after a 401 challenge.
 */
export async function runWget(dir: string, url: string, user: string, password: string): Promise<ProcResult> {
  const rc = path.join(dir, 'wgetrc');
  await writePrivateFile(rc, `http_user = ${user}\nhttp_password = ${password}\n`);
  return runProcess('wget', ['-S', '-O', '-', '--tries=1', '--timeout=10', url], { cwd: dir, env: { WGETRC: rc } });
}

/** The status lines wget -S printed, in order (`HTTP/1.0 401 Unauthorized`, …). */
export function wgetStatusLines(stderr: string): string[] {
  return [...stderr.matchAll(/^\s+(HTTP\/\d\.\d \d{3} .*)$/gm)].map((m) => m[1]!.trim());
}

// ---- curl (preemptive Basic auth) -------------------------------------------------------

/**
 * curl with the credentials in a private netrc (preemptive Basic auth) and `-i`, parsed
 * into status, headers and body. `args` go between the options and the URL.
 */
export async function runCurl(
  dir: string,
  url: string,
  login: { user: string; password: string },
  args: string[] = [],
): Promise<HttpResult & { proc: ProcResult }> {
  const netrc = path.join(dir, 'netrc');
  await writePrivateFile(netrc, `machine 127.0.0.1 login ${login.user} password ${login.password}\n`);
  const proc = await runProcess('curl', ['-q', '-sS', '-i', '--max-time', '10', '--netrc-file', netrc, ...args, url], {
    cwd: dir,
  });
  if (proc.code !== 0) throw new Error(`curl failed (${proc.code}): ${proc.stderr}`);
  return { ...parseHttp(Buffer.from(proc.stdout)), proc };
}

// ---- the bridge under test -----------------------------------------------------------

export const MAIL = `mail.${ZONE}`;

/**
 * A bridge with a short frequency interval (clients here update the same names several times
 * within seconds) and an in-zone MX target with an address; `opts.gateway` adds the RFC 2136 gateway,
 * `opts.secondaries` secondaries of the zone that the primary notifies.
 */
export function startInteropEnv(
  kind: LabKind,
  config: Record<string, unknown> = {},
  opts: Pick<BridgeEnvOptions, 'gateway' | 'secondaries'> = {},
): Promise<BridgeEnv> {
  return BridgeEnv.start({
    ...opts,
    kind,
    config: deepMerge(
      { frequency: { minInterval: 0.05, donatorMinInterval: 0.05, echoMinInterval: 0.05 }, dns: { timeout: 5 } },
      config,
    ),
    records: [`${MAIL}. 60 IN A 192.0.2.25`],
  });
}

let seq = 0;
/** A host name nobody else in this test run uses. */
export function uniqueHost(label: string): string {
  return `${label}-${process.pid}-${++seq}.${ZONE}`;
}
